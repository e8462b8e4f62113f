#include "supervise/builtin/control.hh"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "supervise/builtin/service_files.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::supervise::builtin {

namespace {

// Fills `addr` for `path`; when it is too long for sun_path, goes through an
// O_PATH descriptor of its directory (kept open in `dirHolder`).
void makeAddress(const std::string& path, sockaddr_un& addr, Fd& dirHolder) {
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  std::string target = path;
  if (target.size() >= sizeof addr.sun_path) {
    dirHolder = Fd(::open(parentOf(path).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dirHolder) throwSys(fmt::format("cannot open {}", parentOf(path)));
    target = fmt::format("/proc/self/fd/{}/{}", dirHolder.get(), baseName(path));
    if (target.size() >= sizeof addr.sun_path)
      throw Error("socket name {} is too long", baseName(path));
  }
  std::memcpy(addr.sun_path, target.c_str(), target.size());
}

}  // namespace

Fd listenUnix(const std::string& path) {
  sockaddr_un addr;
  Fd dir;
  makeAddress(path, addr, dir);
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) throwSys("cannot create a unix socket");
  if (::unlink(addr.sun_path) != 0 && errno != ENOENT)
    throwSys(fmt::format("cannot remove the stale socket {}", path));
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throwSys(fmt::format("cannot bind {}", path));
  if (::listen(fd.get(), 16) != 0) throwSys(fmt::format("cannot listen on {}", path));
  return fd;
}

Fd connectUnix(const std::string& path) {
  sockaddr_un addr;
  Fd dir;
  makeAddress(path, addr, dir);
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throwSys("cannot create a unix socket");
  while (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno == EINTR) continue;
    if (errno == ENOENT || errno == ECONNREFUSED) return Fd();
    throwSys(fmt::format("cannot connect to {}", path));
  }
  return fd;
}

std::optional<std::string> readLine(int fd, int timeoutMs, bool* timedOut) {
  if (timedOut) *timedOut = false;
  const int64_t deadline = timeoutMs < 0 ? -1 : monotonicUs() + int64_t{timeoutMs} * 1000;
  std::string line;
  for (;;) {
    int wait = -1;
    if (deadline >= 0) {
      int64_t left = deadline - monotonicUs();
      if (left <= 0) {
        if (timedOut) *timedOut = true;
        return std::nullopt;
      }
      wait = static_cast<int>((left + 999) / 1000);
    }
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, wait);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throwSys("cannot wait for the supervisor");
    if (r == 0) continue;  // the deadline check above ends it
    char buf[512];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return std::nullopt;
    line.append(buf, static_cast<size_t>(n));
    if (auto nl = line.find('\n'); nl != std::string::npos) return line.substr(0, nl + 1);
  }
}

bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::optional<std::string> exchange(const std::string& socketPath, std::string_view command,
                                    int timeoutMs) {
  Fd fd = connectUnix(socketPath);
  if (!fd) return std::nullopt;
  if (!writeAll(fd.get(), std::string(command) + "\n")) return std::nullopt;
  bool timedOut = false;
  auto line = readLine(fd.get(), timeoutMs, &timedOut);
  if (timedOut)
    throw Error("the supervisor did not answer \"{}\" within {} s", command, timeoutMs / 1000);
  return line;
}

}  // namespace mesh::supervise::builtin
