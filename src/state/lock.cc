// StateLock: one writer per state directory, as an flock on <stateDir>/lock.
// flock (not fcntl locks) because it belongs to the open file, so closing some
// other descriptor of the same file elsewhere in the process cannot drop it, and
// the kernel releases it when the holder dies — no stale lock after a crash.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstdio>

#include "state/store.hh"
#include "util/error.hh"
#include "util/fd.hh"
#include "util/fs.hh"

namespace mesh::state {

namespace {

std::string lockPath(const std::string& stateDir) {
  return stateDir + "/lock";
}

Fd openLockFile(const std::string& stateDir, StateLock::Kind kind) {
  makeDirs(stateDir, 0750);
  const std::string path = lockPath(stateDir);
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640));
  if (fd) {
    // Whatever the umask: group members (status readers) must be able to take a shared lock.
    if (::fchmod(fd.get(), 0640) != 0) throwSys(fmt::format("cannot set the mode of {}", path));
    return fd;
  }
  if (errno == EEXIST) fd = Fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  // A reader in the directory's group may only read the file; flock works on any
  // descriptor, so a shared lock needs no write access.
  if (!fd && errno == EACCES && kind == StateLock::Kind::Shared)
    fd = Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) throwSys(fmt::format("cannot open lock file {}", path));
  return fd;
}

// The pid an exclusive holder wrote, when that process still lives. A pid left by a
// holder that has died (and so released the lock) would only mislead.
std::optional<pid_t> holderPid(int fd) {
  char buf[32];
  ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  if (n <= 0) return std::nullopt;
  pid_t pid = 0;
  auto [end, ec] = std::from_chars(buf, buf + n, pid);
  if (ec != std::errc() || pid <= 0) return std::nullopt;
  if (::kill(pid, 0) != 0 && errno != EPERM) return std::nullopt;
  return pid;
}

// The pid is only there to name the holder to a waiter, so failing to write it
// must not fail the lock.
void writePid(int fd) {
  auto text = fmt::format("{}\n", ::getpid());
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) < 0) {
  }
}

// Clears our pid on release, so that a waiter stuck behind a later shared holder
// does not name us (we may well still be running, e.g. the agent between cycles).
void clearPidIfOurs(int fd) {
  auto pid = holderPid(fd);
  if (pid && *pid == ::getpid() && ::ftruncate(fd, 0) != 0) {
  }
}

int lockOp(StateLock::Kind kind) {
  return kind == StateLock::Kind::Exclusive ? LOCK_EX : LOCK_SH;
}

}  // namespace

StateLock StateLock::acquire(const std::string& stateDir, Kind kind) {
  Fd fd = openLockFile(stateDir, kind);
  if (::flock(fd.get(), lockOp(kind) | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) throwSys(fmt::format("cannot lock {}", lockPath(stateDir)));
    auto pid = holderPid(fd.get());
    // One line, so that a cron job or operator sees why nothing happens yet.
    fmt::print(stderr, "mesh-host: waiting for another mesh-host using {}{}…\n", stateDir,
               pid ? fmt::format(" (pid {})", *pid) : std::string());
    std::fflush(stderr);
    while (::flock(fd.get(), lockOp(kind)) != 0) {
      if (errno != EINTR) throwSys(fmt::format("cannot lock {}", lockPath(stateDir)));
    }
  }
  if (kind == Kind::Exclusive) writePid(fd.get());
  StateLock lock;
  lock.fd_ = fd.release();
  return lock;
}

std::optional<StateLock> StateLock::tryAcquire(const std::string& stateDir, Kind kind) {
  Fd fd = openLockFile(stateDir, kind);
  if (::flock(fd.get(), lockOp(kind) | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return std::nullopt;
    throwSys(fmt::format("cannot lock {}", lockPath(stateDir)));
  }
  if (kind == Kind::Exclusive) writePid(fd.get());
  StateLock lock;
  lock.fd_ = fd.release();
  return lock;
}

StateLock::StateLock(StateLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}

StateLock& StateLock::operator=(StateLock&& o) noexcept {
  if (this != &o) {
    StateLock old(std::move(*this));
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

StateLock::~StateLock() {
  if (fd_ < 0) return;
  clearPidIfOurs(fd_);
  // Unlock explicitly: a child forked but not yet exec'd shares this open file,
  // and closing our descriptor alone would leave the lock held through it.
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
}

}  // namespace mesh::state
