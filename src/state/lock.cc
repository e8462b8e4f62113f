// StateLock: one writer per state directory, as an flock on <stateDir>/locks, a
// directory only the state directory's owner may open (0700). A directory, not a
// file: a lock file can be deleted (by hand, by a cleanup script) while it is
// held, and the next mesh-host would then create and lock a new file of the same
// name and run beside the holder; a directory that holds the agent's lock cannot
// be removed like that.
// Not the state directory itself: its group are status readers (0750), and
// anyone who may open a directory may flock it — a reader holding it would stall
// every writer for ever. Nobody else can open <stateDir>/locks, so nobody else
// can take, or hold up, what root waits for. Readers take no lock at all.
// flock (not fcntl locks) because it belongs to the open file, so closing some
// other descriptor of the same directory elsewhere in the process cannot drop it,
// and the kernel releases it when the holder dies — no stale lock after a crash.
// <stateDir>/lock only names the holder (its pid) to a waiter and to readers
// (0640); it locks nothing.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstdio>

#include "state/lock.hh"
#include "state/state_dir.hh"
#include "util/error.hh"
#include "util/fd.hh"
#include "util/fs.hh"
#include "util/text_safe.hh"

namespace mesh::state {

namespace {

std::string pidPath(const std::string& stateDir) {
  return StateDir{stateDir}.lock();
}

// Whether this process may take the lock at all: root, or the state directory's
// owner. Anyone else (a member of its group reading the status) cannot open
// <stateDir>/locks, and must not be able to.
bool mayLock(const std::string& stateDir) {
  if (::geteuid() == 0) return true;
  struct stat st {};
  return ::stat(stateDir.c_str(), &st) != 0 || st.st_uid == ::geteuid();
}

// <stateDir>/locks, made 0700 when missing, opened without following a link and
// checked on the descriptor: a directory of ours that nobody else may enter.
Fd openLocks(const std::string& stateDir) {
  makeDirs(stateDir, 0750);
  const std::string path = StateDir{stateDir}.locks();
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    throwSys(fmt::format("cannot make {}", path));
  Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) throwSys(fmt::format("cannot open {}", path));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throwSys(fmt::format("cannot inspect {}", path));
  if (st.st_uid != ::geteuid())
    throw Error("refusing {}: it is owned by uid {}, not by uid {} running mesh-host", path,
                st.st_uid, ::geteuid());
  // Opened by nobody else: only its owner could have loosened it.
  if ((st.st_mode & 077) != 0 && ::fchmod(fd.get(), 0700) != 0)
    throwSys(fmt::format("cannot set the mode of {}", path));
  return fd;
}

// The file an exclusive holder writes its pid to; created 0640 whatever the umask.
// Failing to open it must not fail the lock: the pid is only there to name the
// holder to a waiter.
Fd openPidFile(const std::string& stateDir) {
  const std::string path = pidPath(stateDir);
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640));
  if (fd) {
    if (::fchmod(fd.get(), 0640) != 0) {
    }
    return fd;
  }
  if (errno == EEXIST) fd = Fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
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

std::optional<pid_t> holderPid(const std::string& stateDir) {
  Fd fd(::open(pidPath(stateDir).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return std::nullopt;
  return holderPid(fd.get());
}

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

// Once the directory is locked: an exclusive holder names itself in the pid file.
Fd notePid(const std::string& stateDir, StateLock::Kind kind) {
  if (kind != StateLock::Kind::Exclusive) return Fd();
  Fd pid = openPidFile(stateDir);
  if (pid) writePid(pid.get());
  return pid;
}

}  // namespace

StateLock StateLock::acquire(const std::string& stateDir, Kind kind) {
  if (kind == Kind::Shared && !mayLock(stateDir)) return StateLock(Fd(), Fd());
  Fd fd = openLocks(stateDir);
  if (::flock(fd.get(), lockOp(kind) | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) throwSys(fmt::format("cannot lock {}", stateDir));
    auto pid = holderPid(stateDir);
    // One line, so that a cron job or operator sees why nothing happens yet.
    fmt::print(stderr, "mesh-host: waiting for another mesh-host using {}{}…\n",
               shownText(stateDir), pid ? fmt::format(" (pid {})", *pid) : std::string());
    std::fflush(stderr);
    while (::flock(fd.get(), lockOp(kind)) != 0) {
      if (errno != EINTR) throwSys(fmt::format("cannot lock {}", stateDir));
    }
  }
  return StateLock(std::move(fd), notePid(stateDir, kind));
}

std::optional<StateLock> StateLock::tryAcquire(const std::string& stateDir, Kind kind) {
  if (kind == Kind::Shared && !mayLock(stateDir)) {
    if (stateLockHolder(stateDir)) return std::nullopt;
    return StateLock(Fd(), Fd());
  }
  Fd fd = openLocks(stateDir);
  if (::flock(fd.get(), lockOp(kind) | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return std::nullopt;
    throwSys(fmt::format("cannot lock {}", stateDir));
  }
  return StateLock(std::move(fd), notePid(stateDir, kind));
}

std::optional<pid_t> stateLockHolder(const std::string& stateDir) {
  return holderPid(stateDir);
}

StateLock::StateLock(StateLock&& o) noexcept = default;

StateLock& StateLock::operator=(StateLock&& o) noexcept {
  if (this != &o) {
    StateLock old(std::move(*this));  // released (unlocked, pid cleared) here
    fd_ = std::move(o.fd_);
    pidFd_ = std::move(o.pidFd_);
  }
  return *this;
}

StateLock::~StateLock() {
  if (pidFd_) clearPidIfOurs(pidFd_.get());
  // Unlock explicitly: a child forked but not yet exec'd shares this open file,
  // and closing our descriptor alone would leave the lock held through it.
  if (fd_) ::flock(fd_.get(), LOCK_UN);
}

}  // namespace mesh::state
