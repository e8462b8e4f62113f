#include "util/error.hh"

#include <cerrno>
#include <cstring>

namespace mesh {

SysError::SysError(int err, const std::string& what)
    : Error(fmt::format("{}: {}", what, std::strerror(err))), err_(err) {}

void throwSys(const std::string& what) {
  throw SysError(errno, what);
}

}  // namespace mesh
