// Two `apply`s at once never interleave: while another holds the state lock, a
// second apply says it is waiting and applies nothing; once the lock is released it
// goes on and converges.
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

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
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
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

  bool running() {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == 0) return true;
    pid_ = -1;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }

  int wait() {
    if (pid_ > 0) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
      code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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

class Lock : public Node {};

TEST_F(Lock, SecondApplyWaitsForTheFirst) {
  const std::string first = declare(R"(
[module.m.file.a]
path = "/etc/m/a"
content = "a\n"
)");
  ASSERT_EQ(apply(first).code, 0);
  const std::string lockPath = stateDir() + "/lock";
  ASSERT_TRUE(fs::exists(lockPath)) << "the first apply made no lock file";

  // Hold the lock as another mesh-host would.
  int held = ::open(lockPath.c_str(), O_RDWR | O_CLOEXEC);
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
  Background bg(
      {MESH_HOST_BIN, "apply", second, "--root", root, "--blobs", blobs, "--node", "test"});
  ASSERT_TRUE(bg.waitFor("waiting for another mesh-host"))
      << "no waiting line on stderr; got: " << bg.stderrSoFar();
  EXPECT_NE(bg.stderrSoFar().find(stateDir()), std::string::npos) << bg.stderrSoFar();
  // It said it waits, and it must still be waiting: nothing applied.
  EXPECT_TRUE(bg.running()) << "it did not wait; stderr: " << bg.stderrSoFar();
  EXPECT_FALSE(fs::exists(at("/etc/m/b"))) << "applied while another held the lock";

  ASSERT_EQ(::flock(held, LOCK_UN), 0);
  ::close(held);
  EXPECT_EQ(bg.wait(), 0) << bg.drainStderr();
  EXPECT_EQ(read("/etc/m/b"), "b\n");

  Result status = mesh({"status", "--json"});
  EXPECT_EQ(status.code, 0) << status.out << status.err;
  EXPECT_EQ(status.json()["cycles"], 2) << status.out;
}

}  // namespace
}  // namespace mesh::e2e
