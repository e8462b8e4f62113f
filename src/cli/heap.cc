#include "cli/heap.hh"

#include <malloc.h>

namespace mesh::cli {

void tuneHeapForOneShot() {
  constexpr int kMiB = 1 << 20;
  ::mallopt(M_MMAP_THRESHOLD, 64 * kMiB);
  ::mallopt(M_TRIM_THRESHOLD, 512 * kMiB);
  ::mallopt(M_TOP_PAD, 64 * kMiB);  // reserved, not resident until touched
}

}  // namespace mesh::cli
