#include "util/open_files.hh"

#include <sys/resource.h>

#include <algorithm>

namespace mesh {

size_t openFilesShare(size_t most, size_t parts) {
  static const size_t limit = [] {
    struct rlimit rl {};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return size_t{1024};
    return static_cast<size_t>(rl.rlim_cur);
  }();
  return std::clamp<size_t>(limit / std::max<size_t>(parts, 1), 8, std::max<size_t>(most, 8));
}

}  // namespace mesh
