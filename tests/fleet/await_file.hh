// Waiting on a file another process writes (a node's log, a service's log of its starts):
// an inotify watch on its directory wakes the check each time the file changes, never a
// timer. The file is read again after each change; `done` says whether what it holds is
// what is awaited.
#pragma once

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "../support/files.hh"

namespace mesh::fleet::test {

// Whether `done(text of path)` held before `timeout` passed. The watch is made before the
// first read, so no change between the read and the wait is missed.
inline bool awaitFile(const std::string& path, const std::function<bool(const std::string&)>& done,
                      std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  const int fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0) {
    ADD_FAILURE() << "inotify_init1: " << std::strerror(errno);
    return false;
  }
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (::inotify_add_watch(fd, dir.c_str(), IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO) <
      0) {
    ADD_FAILURE() << "inotify_add_watch " << dir << ": " << std::strerror(errno);
    ::close(fd);
    return false;
  }
  bool met = false;
  for (;;) {
    if (done(::mesh::test::slurp(path))) {
      met = true;
      break;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count()) + 1) < 0 && errno != EINTR) {
      ADD_FAILURE() << "poll on inotify: " << std::strerror(errno);
      break;
    }
    char events[4096];
    while (::read(fd, events, sizeof events) > 0) {
    }
  }
  ::close(fd);
  return met;
}

}  // namespace mesh::fleet::test
