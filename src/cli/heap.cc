#include "cli/heap.hh"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace mesh::cli {

void tuneHeapForOneShot() {
  constexpr int kMiB = 1 << 20;
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  ::mallopt(M_MMAP_THRESHOLD, 64 * kMiB);
  ::mallopt(M_TRIM_THRESHOLD, 512 * kMiB);
  ::mallopt(M_TOP_PAD, 64 * kMiB);  // reserved, not resident until touched
  // Grow the heap now by the pad, so that the range to advise is known.
  const auto before = reinterpret_cast<uintptr_t>(::sbrk(0));
  void* volatile grow = std::malloc(kMiB);  // volatile: not elided with its free
  const auto after = reinterpret_cast<uintptr_t>(::sbrk(0));
  std::free(grow);
  if (before == static_cast<uintptr_t>(-1) || after <= before) return;
  const uintptr_t from = (before + kHugePage - 1) & ~(kHugePage - 1), to = after & ~(kHugePage - 1);
  // Only advice: a kernel without transparent huge pages says EINVAL, and the heap
  // stays as it was.
  if (to > from) ::madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);
}

}  // namespace mesh::cli
