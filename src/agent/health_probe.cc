#include "agent/health_probe.hh"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "util/fd.hh"
#include "util/text_safe.hh"

namespace mesh::agent {

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void childFail(int fd, const char* what, int err) {
  const char* e = ::strerror(err);
  (void)!::write(fd, what, std::strlen(what));
  (void)!::write(fd, ": ", 2);
  (void)!::write(fd, e, std::strlen(e));
  ::_exit(127);
}

}  // namespace

std::string probeReason(const std::string& what, const std::string& output) {
  std::string line = output.substr(0, output.find('\n'));
  if (line.size() > kProbeReasonMax) line = line.substr(0, kProbeReasonMax) + "…";
  line = shownText(validUtf8(line));
  return line.empty() ? what : what + ": " + line;
}

ProbeResult runProbe(const Probe& p) {
  if (p.argv.empty() || p.argv[0].empty()) return {false, "no command"};
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return {false, fmt::format("cannot run a check: pipe: {}", std::strerror(errno))};
  Fd readEnd(fds[0]), writeEnd(fds[1]);
  // Everything the child needs, made before fork (the agent has threads).
  std::vector<char*> argv;
  for (const auto& a : p.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const bool drop = p.uid.has_value();
  const uid_t uid = p.uid.value_or(0);
  const gid_t gid = p.gid.value_or(0);
  const pid_t pid = ::fork();
  if (pid < 0) return {false, fmt::format("cannot run a check: fork: {}", std::strerror(errno))};
  if (pid == 0) {
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int out = writeEnd.get();
    int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(out, 2) < 0)
      childFail(out, "cannot set up the check's output", errno);
    if (drop) {
      if (::setgroups(1, &gid) != 0 && errno != EPERM) childFail(2, "setgroups", errno);
      if (::setgid(gid) != 0) childFail(2, "cannot run the check as the process's group", errno);
      if (::setuid(uid) != 0) childFail(2, "cannot run the check as the process's user", errno);
    }
    if (::chdir("/") != 0) childFail(2, "chdir /", errno);
    ::execvp(argv[0], argv.data());
    childFail(2, argv[0], errno);
  }
  writeEnd = Fd();
  ::setpgid(pid, pid);  // also here: no race with the kill below
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  const auto deadline = Clock::now() + p.timeout;
  std::string output;
  bool open = true, exited = false, timedOut = false;
  int status = 0;
  for (;;) {
    if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) exited = true;
    // Done when it exited and its output ended (or a child it left holds the pipe: its
    // exit decides, the pipe is drained of what is there).
    if (exited && !open) break;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      if (!exited) timedOut = true;
      break;
    }
    pollfd pf[2] = {{readEnd.get(), POLLIN, 0}, {pidfd ? pidfd.get() : -1, POLLIN, 0}};
    const int n = ::poll(pf, 2, pidfd || exited ? static_cast<int>(left) : std::min<int>(left, 20));
    if (n < 0 && errno != EINTR) break;
    if (open && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      char buf[1024];
      const ssize_t got = ::read(readEnd.get(), buf, sizeof buf);
      if (got <= 0) {
        open = false;
      } else if (output.size() < kProbeOutputKept) {
        output.append(buf,
                      std::min<size_t>(static_cast<size_t>(got), kProbeOutputKept - output.size()));
      }
    }
    if (!open) readEnd = Fd();
    if (exited && open) {
      // Exited; what is left in the pipe now is all it said (a child it left behind may
      // hold the pipe open: not waited for).
      pollfd rest{readEnd.get(), POLLIN, 0};
      if (::poll(&rest, 1, 0) <= 0) break;
    }
  }
  ::kill(-pid, SIGKILL);  // the whole group: whatever it left behind too
  if (!exited) ::waitpid(pid, &status, 0);
  if (timedOut) return {false, fmt::format("timed out after {} ms", p.timeout.count())};
  if (WIFSIGNALED(status))
    return {false, probeReason(fmt::format("killed by signal {}", WTERMSIG(status)), output)};
  const int code = WEXITSTATUS(status);
  if (code == 0) return {true, ""};
  return {false, probeReason(fmt::format("exit {}", code), output)};
}

}  // namespace mesh::agent
