#include "supervise/builtin/spawn_supervisor.hh"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <vector>

#include "supervise/builtin/control.hh"
#include "util/error.hh"
#include "util/fd.hh"
#include "util/fs.hh"

extern char** environ;

namespace mesh::supervise::builtin {

namespace {

constexpr int kReadyFd = 3;

// In the grandchild, before exec: async-signal-safe calls only.
[[noreturn]] void execSupervisor(int devNull, int readyWrite, const char* exe, char** argv) {
  int ready = ::fcntl(readyWrite, F_DUPFD, 10);
  int null = ::fcntl(devNull, F_DUPFD, 10);
  if (ready < 0 || null < 0 || ::dup2(null, 0) < 0 || ::dup2(null, 1) < 0 || ::dup2(null, 2) < 0 ||
      ::dup2(ready, kReadyFd) < 0)
    ::_exit(127);
  ::close_range(kReadyFd + 1, ~0U, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
  ::signal(SIGHUP, SIG_IGN);
  ::execve(exe, argv, environ);
  int err = errno;
  // "fail cannot execute the supervisor: errno N\n", formatted by hand.
  char msg[96] = "fail cannot execute the supervisor: errno ";
  size_t len = std::strlen(msg);
  char digits[12];
  int nd = 0;
  do digits[nd++] = static_cast<char>('0' + err % 10);
  while ((err /= 10) > 0 && nd < 11);
  while (nd > 0) msg[len++] = digits[--nd];
  msg[len++] = '\n';
  (void)!::write(kReadyFd, msg, len);
  ::_exit(127);
}

std::string lastLogLine(const std::string& log) {
  try {
    auto text = readFile(log);
    if (!text) return {};
    while (!text->empty() && text->back() == '\n') text->pop_back();
    return text->substr(text->rfind('\n') == std::string::npos ? 0 : text->rfind('\n') + 1);
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace

Reply spawnSupervisor(const std::string& exe, const ServicePaths& paths, bool adoptOnly,
                      int timeoutMs) {
  if (::access(exe.c_str(), X_OK) != 0)
    throwSys(
        fmt::format("cannot run the builtin supervisor {} (it belongs beside mesh-host)", exe));
  makeDirs(parentOf(paths.log), 0750);  // in the state directory: nothing there for others
  makeDirs(paths.runDir, 0755);

  std::vector<std::string> args = {exe, fmt::format("--ready-fd={}", kReadyFd)};
  if (adoptOnly) args.push_back("--adopt-only");
  if (!paths.isLegacy()) args.push_back("--run-dir=" + paths.runDir);
  args.push_back(paths.dir);
  args.push_back(paths.log);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  Fd devNull(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!devNull) throwSys("cannot open /dev/null");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throwSys("cannot create a pipe");
  Fd readyRead(fds[0]), readyWrite(fds[1]);

  pid_t middle = ::fork();
  if (middle < 0) throwSys("cannot fork");
  if (middle == 0) {
    // A new session, then fork again so the supervisor is no session leader
    // and is re-parented (to init or a subreaper) as soon as we exit.
    ::setsid();
    pid_t pid = ::fork();
    if (pid == 0) execSupervisor(devNull.get(), readyWrite.get(), exe.c_str(), argv.data());
    ::_exit(pid < 0 ? 1 : 0);
  }
  readyWrite.reset();
  int ws = 0;
  while (::waitpid(middle, &ws, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) throw Error("cannot fork the builtin supervisor");

  bool timedOut = false;
  auto line = readLine(readyRead.get(), timeoutMs, &timedOut);
  if (timedOut)
    return Reply::fail(fmt::format("the supervisor did not report within {} s (see {})",
                                   timeoutMs / 1000, paths.log));
  if (!line) {
    std::string last = lastLogLine(paths.log);
    return Reply::fail(last.empty() ? "the supervisor exited without a word"
                                    : "the supervisor exited: " + last);
  }
  Reply r = Reply::parse(*line);
  if (r.kind == Reply::Kind::Fail &&
      r.detail.rfind("cannot execute the supervisor: errno ", 0) == 0)
    r.detail =
        fmt::format("cannot execute {}: {}", exe, std::strerror(std::atoi(r.detail.c_str() + 37)));
  return r;
}

}  // namespace mesh::supervise::builtin
