#include "state/note_page.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace mesh::state {

Fd openNotePage(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (fd || errno != ENOENT) return fd;
  fd = Fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640));
  if (!fd) return fd;
  const std::string zeros(kNotePageSize, '\0');
  if (::fchmod(fd.get(), 0640) != 0 ||
      ::pwrite(fd.get(), zeros.data(), zeros.size(), 0) != static_cast<ssize_t>(zeros.size()) ||
      ::fsync(fd.get()) != 0) {
    ::unlink(path.c_str());  // a page without its blocks would fail when it is needed
    return Fd();
  }
  return fd;
}

void prepareNotePage(const std::string& path) noexcept {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) return;
  (void)openNotePage(path);
}

bool writeNotePage(int fd, std::string_view text) {
  std::string page(text.substr(0, kNotePageSize - 1));
  page.resize(kNotePageSize, '\0');
  return ::pwrite(fd, page.data(), page.size(), 0) == static_cast<ssize_t>(page.size()) &&
         ::fdatasync(fd) == 0;
}

std::optional<std::string> readNotePage(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return std::nullopt;
  std::string page(kNotePageSize, '\0');
  const ssize_t n = ::pread(fd.get(), page.data(), page.size(), 0);
  if (n <= 0 || page[0] == '\0') return std::nullopt;
  page.resize(std::min(page.find('\0'), static_cast<size_t>(n)));
  return page;
}

void clearNotePage(const std::string& path) noexcept {
  Fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  char first = '\0';
  if (fd && ::pread(fd.get(), &first, 1, 0) == 1 && first != '\0') {
    const char nul = '\0';
    if (::pwrite(fd.get(), &nul, 1, 0) == 1) (void)::fdatasync(fd.get());
  }
}

}  // namespace mesh::state
