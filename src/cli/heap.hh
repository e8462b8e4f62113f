// The heap of a one-shot command (apply, plan, status…): tuned for a process that
// allocates a few dozen MiB, touches it once and exits.
#pragma once

namespace mesh::cli {

// Large buffers (the declaration's text, its compiled form) come from the heap
// instead of a fresh mmap each (faulted in again, then unmapped); nothing is given
// back to the system before the exit; the heap grows in large steps. Not advised
// for transparent huge pages (it was): where memory is fragmented — beside other
// programs, on a busy node — the kernel compacts memory to make each 2 MiB page
// before the fault returns, and a no-op apply of 5,000 files took 86–96 ms instead
// of 33–39 (docs/performance.md). Long-running commands (run, fleet serve) do not
// call it: they give memory back between cycles instead.
void tuneHeapForOneShot();

}  // namespace mesh::cli
