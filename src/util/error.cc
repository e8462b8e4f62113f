#include "util/error.hh"

#include <cerrno>
#include <cstring>

namespace mesh {

SysError::SysError(int err, const std::string& what)
    : Error(fmt::format("{}: {}", what, std::strerror(err))), err_(err) {}

void Error::addContext(std::string_view context) {
  what_ = fmt::format("{}: {}", context, what_);
}

void Error::addHint(std::string_view hint) {
  what_ = fmt::format("{}; {}", what_, hint);
}

void throwSys(const std::string& what) {
  throw SysError(errno, what);
}

}  // namespace mesh
