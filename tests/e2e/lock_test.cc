// Two `apply`s at once never interleave: while another holds the state lock, a
// second apply says it is waiting and applies nothing; once the lock is released it
// goes on and converges.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../support/child.hh"
#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

// A mesh-host started in the background, its stderr readable as it writes it.
class Background {
 public:
  explicit Background(const std::vector<std::string>& argv) {
    int errPipe[2];
    if (::pipe2(errPipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      int devnull = ::open("/dev/null", O_RDWR);
      ::dup2(devnull, 0);
      ::dup2(devnull, 1);
      ::dup2(errPipe[1], 2);
      test::execArgv(argv);
    }
    ::close(errPipe[1]);
    err_ = errPipe[0];
  }
  ~Background() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
    if (err_ >= 0) ::close(err_);
  }

  // Reads stderr until `needle` appears (true) or it closes or `timeoutMs` passes
  // without output (false). Blocks on the pipe; no sleeps.
  bool waitFor(const std::string& needle, int timeoutMs = 20000) {
    while (stderr_.find(needle) == std::string::npos) {
      pollfd p{err_, POLLIN, 0};
      if (::poll(&p, 1, timeoutMs) <= 0) return false;
      char buf[4096];
      ssize_t n = ::read(err_, buf, sizeof buf);
      if (n <= 0) return false;
      stderr_.append(buf, static_cast<size_t>(n));
    }
    return true;
  }

  pid_t pid() const { return pid_; }

  bool running() {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == 0) return true;
    pid_ = -1;
    code_ = test::exitCodeOf(status);
    return false;
  }

  int wait() {
    if (pid_ > 0) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
      code_ = test::exitCodeOf(status);
    }
    return code_;
  }

  std::string drainStderr() {
    waitFor("\x01never\x01", 5000);  // to end of stream
    return stderr_;
  }
  const std::string& stderrSoFar() const { return stderr_; }

 private:
  pid_t pid_ = -1;
  int err_ = -1;
  int code_ = -1;
  std::string stderr_;
};

class Lock : public Node {
 protected:
  // `mesh-host apply DECL` on this node, started in the background.
  Background applyInBackground(const std::string& decl) const {
    return Background(
        {MESH_HOST_BIN, "apply", decl, "--root", root, "--blobs", blobs, "--node", "test"});
  }

  // `b` says it waits for another mesh-host, and still waits: `path`, which it
  // declares, is not there yet.
  void expectWaiting(Background& b, const std::string& path) {
    ASSERT_TRUE(b.waitFor("waiting for another mesh-host"))
        << "no waiting line on stderr; got: " << b.stderrSoFar();
    EXPECT_TRUE(b.running()) << "it did not wait; stderr: " << b.stderrSoFar();
    EXPECT_FALSE(fs::exists(at(path))) << "applied while another held the lock";
  }
};

TEST_F(Lock, SecondApplyWaitsForTheFirst) {
  const std::string first = declare(R"(
[module.m.file.a]
path = "/etc/m/a"
content = "a\n"
)");
  ASSERT_EQ(apply(first).code, 0);
  const std::string lockPath = stateDir() + "/lock";
  ASSERT_TRUE(fs::exists(lockPath)) << "the first apply made no lock file";

  // Hold the lock as another mesh-host would: on <state-dir>/locks.
  int held = ::open((stateDir() + "/locks").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);

  const std::string second = declare(R"(
[module.m.file.a]
path = "/etc/m/a"
content = "a\n"

[module.m.file.b]
path = "/etc/m/b"
content = "b\n"
)",
                                     "second.toml");
  Background bg = applyInBackground(second);
  ASSERT_NO_FATAL_FAILURE(expectWaiting(bg, "/etc/m/b"));
  EXPECT_NE(bg.stderrSoFar().find(stateDir()), std::string::npos) << bg.stderrSoFar();

  ASSERT_EQ(::flock(held, LOCK_UN), 0);
  ::close(held);
  EXPECT_EQ(bg.wait(), 0) << bg.drainStderr();
  EXPECT_EQ(read("/etc/m/b"), "b\n");

  Result status = mesh({"status", "--json"});
  EXPECT_EQ(status.code, 0) << status.out << status.err;
  EXPECT_EQ(status.json()["cycles"], 2) << status.out;
}

// An apply blocked inside its cycle (reading a credential from a FIFO nobody
// writes yet) holds the lock. Deleting <state-dir>/lock meanwhile must not let a
// second apply run beside it: the lock is on the directory, not on that file.
TEST_F(Lock, DeletingTheLockFileLetsNoSecondApplyIn) {
  const std::string fifo = work + "/secret.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string first = declare(fmt::format(R"(
[module.m.credential.key]
path = "/etc/m/key"
from = "{}"
)",
                                                fifo));
  Background one = applyInBackground(first);
  // It holds the lock once it has written its pid into the lock file.
  const std::string lockPath = stateDir() + "/lock";
  const std::string pidLine = std::to_string(one.pid()) + "\n";
  for (int i = 0; i < 2000 && slurp(lockPath) != pidLine; ++i) {
    ASSERT_TRUE(one.running()) << "the first apply ended: " << one.drainStderr();
    ::usleep(10000);
  }
  ASSERT_EQ(slurp(lockPath), pidLine) << "the first apply never took the lock";
  ASSERT_TRUE(one.running());

  fs::remove(lockPath);
  const std::string second = declare(R"(
[module.m.file.b]
path = "/etc/m/b"
content = "b\n"
)",
                                     "second.toml");
  Background two = applyInBackground(second);
  ASSERT_NO_FATAL_FAILURE(expectWaiting(two, "/etc/m/b"));

  // Let the first one read its secret (as often as it opens the FIFO) and finish;
  // then the second goes on.
  for (int i = 0; i < 2000 && one.running(); ++i) {
    int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);  // ENXIO: no reader yet
    if (w >= 0) {
      EXPECT_EQ(::write(w, "s3cret", 6), 6);
      ::close(w);
    }
    ::usleep(10000);
  }
  EXPECT_EQ(one.wait(), 0) << one.drainStderr();
  EXPECT_EQ(two.wait(), 0) << two.drainStderr();
  EXPECT_EQ(read("/etc/m/b"), "b\n");
  EXPECT_FALSE(fs::exists(at("/etc/m/key")))
      << "the second apply, run after the first, prunes the key it does not declare";
}

}  // namespace
}  // namespace mesh::e2e
