// StateLock across processes. Children synchronise with the parent through pipes:
// no sleeps, so the tests are neither slow nor flaky.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../../support/files.hh"
#include "state/lock.hh"
#include "state_test.hh"

namespace mesh::state {
namespace {

using LockTest = testing::StateTest;
using Kind = StateLock::Kind;
using ::mesh::test::slurp;

struct Pipe {
  Pipe() { EXPECT_EQ(::pipe(fds), 0); }
  ~Pipe() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
  int r() const { return fds[0]; }
  int w() const { return fds[1]; }
  void send() const { EXPECT_EQ(::write(w(), "x", 1), 1); }
  // Blocks until the other side sends (true) or closes its end (false).
  bool wait() const {
    char c;
    return ::read(r(), &c, 1) == 1;
  }
  bool ready() const {
    pollfd p{r(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }
  std::string line() const {
    std::string out;
    char c;
    while (::read(r(), &c, 1) == 1 && c != '\n') out += c;
    return out;
  }
  // The first line within `ms`; what came so far when none did.
  std::string lineWithin(int ms) const {
    std::string out;
    char c;
    for (;;) {
      pollfd p{r(), POLLIN, 0};
      if (::poll(&p, 1, ms) != 1 || ::read(r(), &c, 1) != 1 || c == '\n') return out;
      out += c;
    }
  }
  int fds[2] = {-1, -1};
};

// Runs body in a child; its return value becomes the exit code. No gtest in there.
template <typename F>
pid_t spawn(F&& body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int code = 98;
    try {
      code = body();
    } catch (...) {
      code = 99;
    }
    ::_exit(code);
  }
  return pid;
}

// A child that takes the exclusive lock of `dir`, sends on `held`, and keeps the lock
// until `release` is sent. Its pid.
pid_t holder(const std::string& dir, const Pipe& held, const Pipe& release) {
  return spawn([&] {
    auto lock = StateLock::acquire(dir, Kind::Exclusive);
    held.send();
    release.wait();
    return 0;
  });
}

// A child that waits for the `kind` lock of `dir`: what it says on stderr comes through
// `err`, and it sends on `acquired` once it holds the lock. Its pid.
pid_t waiter(const std::string& dir, Kind kind, const Pipe& err, const Pipe& acquired) {
  return spawn([&] {
    ::dup2(err.w(), STDERR_FILENO);
    auto lock = StateLock::acquire(dir, kind);
    acquired.send();
    return 0;
  });
}

int exitCode(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(LockTest, TryAcquireFailsWhileAnotherProcessHoldsIt) {
  Pipe held, release;
  pid_t child = holder(dir, held, release);
  ASSERT_TRUE(held.wait());
  EXPECT_FALSE(StateLock::tryAcquire(dir, Kind::Exclusive));
  EXPECT_FALSE(StateLock::tryAcquire(dir, Kind::Shared));
  release.send();
  EXPECT_EQ(exitCode(child), 0);
  EXPECT_TRUE(StateLock::tryAcquire(dir, Kind::Exclusive)) << "the lock dies with its holder";
}

TEST_F(LockTest, SharedHoldersCoexistButExcludeAWriter) {
  auto mine = StateLock::acquire(dir, Kind::Shared);
  pid_t child = spawn([&] {
    if (StateLock::tryAcquire(dir, Kind::Exclusive)) return 1;
    if (!StateLock::tryAcquire(dir, Kind::Shared)) return 2;
    return 0;
  });
  EXPECT_EQ(exitCode(child), 0);
}

TEST_F(LockTest, ExclusiveWaitsForSharedAndSaysSo) {
  auto mine = std::optional(StateLock::acquire(dir, Kind::Shared));
  Pipe err, acquired;
  pid_t child = waiter(dir, Kind::Exclusive, err, acquired);
  // The child says it waits just before it blocks; while we hold the shared lock
  // it cannot have the exclusive one.
  std::string line = err.line();
  EXPECT_EQ(line, "mesh-host: waiting for another mesh-host using " + dir + "…")
      << "a shared holder writes no pid, so none is named";
  EXPECT_FALSE(acquired.ready());
  mine.reset();
  EXPECT_TRUE(acquired.wait());
  EXPECT_EQ(exitCode(child), 0);
}

TEST_F(LockTest, WaiterNamesTheExclusiveHolder) {
  auto mine = std::optional(StateLock::acquire(dir, Kind::Exclusive));
  Pipe err, acquired;
  pid_t child = waiter(dir, Kind::Shared, err, acquired);
  EXPECT_EQ(err.line(), "mesh-host: waiting for another mesh-host using " + dir + " (pid " +
                            std::to_string(::getpid()) + ")…");
  EXPECT_FALSE(acquired.ready());
  mine.reset();
  EXPECT_TRUE(acquired.wait());
  EXPECT_EQ(exitCode(child), 0);
}

TEST_F(LockTest, LockFileHoldsTheWriterPidWhileHeld) {
  const std::string path = dir + "/lock";
  {
    auto lock = StateLock::acquire(dir, Kind::Exclusive);
    EXPECT_EQ(slurp(path), std::to_string(::getpid()) + "\n");
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0640u);
  }
  EXPECT_EQ(slurp(path), "") << "released: no pid left to mislead a later waiter";
  auto shared = StateLock::acquire(dir, Kind::Shared);
  EXPECT_EQ(slurp(path), "");
}

// The lock is on the directory, not on <dir>/lock: deleting that file (or
// replacing it) while a writer holds the lock lets no second writer in.
TEST_F(LockTest, DeletingTheLockFileLetsNoSecondWriterIn) {
  Pipe held, release;
  pid_t child = holder(dir, held, release);
  ASSERT_TRUE(held.wait());
  const std::string path = dir + "/lock";
  std::filesystem::remove(path);
  EXPECT_FALSE(StateLock::tryAcquire(dir, Kind::Exclusive)) << "a second writer got in";
  EXPECT_FALSE(StateLock::tryAcquire(dir, Kind::Shared));
  std::ofstream(path) << "";  // a new file of the same name changes nothing either
  EXPECT_FALSE(StateLock::tryAcquire(dir, Kind::Exclusive)) << "a second writer got in";

  // A second writer still waits, saying so, until the first one is done.
  Pipe err, acquired;
  pid_t second = waiter(dir, Kind::Exclusive, err, acquired);
  EXPECT_EQ(err.lineWithin(10000), "mesh-host: waiting for another mesh-host using " + dir + "…")
      << "the second writer did not wait";
  EXPECT_FALSE(acquired.ready());
  release.send();
  EXPECT_EQ(exitCode(child), 0);
  EXPECT_TRUE(acquired.wait());
  EXPECT_EQ(exitCode(second), 0);
}

// A reader holds a shared lock through a read-only descriptor of the directory,
// which needs no lock file at all.
TEST_F(LockTest, SharedLockNeedsNoLockFile) {
  {
    auto shared = StateLock::acquire(dir, Kind::Shared);
    EXPECT_FALSE(std::filesystem::exists(dir + "/lock"));
    EXPECT_FALSE(StateLock::tryAcquire(dir, Kind::Exclusive)) << "a writer got in beside a reader";
    EXPECT_TRUE(StateLock::tryAcquire(dir, Kind::Shared));
  }
  EXPECT_TRUE(StateLock::tryAcquire(dir, Kind::Exclusive));
}

TEST_F(LockTest, MovedLockStaysHeldAndReleasesOnce) {
  auto a = StateLock::acquire(dir, Kind::Exclusive);
  StateLock b = std::move(a);
  EXPECT_FALSE(StateLock::tryAcquire(dir, Kind::Exclusive));
  { StateLock c = std::move(b); }
  EXPECT_TRUE(StateLock::tryAcquire(dir, Kind::Exclusive));
}

}  // namespace
}  // namespace mesh::state
