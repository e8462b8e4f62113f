#include "agent_process.hh"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "../support/child.hh"

namespace mesh::e2e {

using Clock = std::chrono::steady_clock;

namespace {

int remainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

}  // namespace

AgentProcess::AgentProcess(const std::vector<std::string>& argv,
                           const std::map<std::string, std::string>& env) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) std::abort();
  pid_ = ::fork();
  if (pid_ == 0) {
    int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
    ::dup2(fds[1], 2);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    test::execArgv(argv);
  }
  ::close(fds[1]);
  err_ = fds[0];
}

AgentProcess::~AgentProcess() {
  if (!exitCode_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (err_ >= 0) ::close(err_);
}

void AgentProcess::signal(int sig) const {
  ::kill(pid_, sig);
}

bool AgentProcess::pump(int timeoutMs, bool* gotData) {
  if (gotData) *gotData = false;
  if (eof_) return false;
  pollfd p{err_, POLLIN, 0};
  if (::poll(&p, 1, timeoutMs) <= 0) return true;
  if (gotData) *gotData = true;
  char buf[65536];
  ssize_t n = ::read(err_, buf, sizeof buf);
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  partial_.append(buf, static_cast<size_t>(n));
  all_.append(buf, static_cast<size_t>(n));
  for (size_t nl; (nl = partial_.find('\n')) != std::string::npos;) {
    auto j = Json::parse(partial_.substr(0, nl), nullptr, false);
    if (!j.is_discarded() && j.is_object()) lines_.push_back(std::move(j));
    partial_.erase(0, nl + 1);
  }
  return true;
}

std::optional<Json> AgentProcess::waitFor(const std::function<bool(const Json&)>& match,
                                          milliseconds within) {
  const auto deadline = Clock::now() + within;
  for (;;) {
    while (consumed_ < lines_.size()) {
      const Json& j = lines_[consumed_++];
      if (match(j)) return j;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    if (!pump(remainingMs(deadline)) && consumed_ == lines_.size()) return std::nullopt;
  }
}

bool AgentProcess::waitForText(const std::string& text, milliseconds within) {
  const auto deadline = Clock::now() + within;
  while (all_.find(text) == std::string::npos) {
    if (Clock::now() >= deadline) return false;
    if (!pump(remainingMs(deadline))) return all_.find(text) != std::string::npos;
  }
  return true;
}

bool AgentProcess::isSummary(const Json& j) {
  return j.value("msg", "").rfind("cycle ", 0) == 0 && j.contains("interrupted");
}

std::optional<Json> AgentProcess::nextSummary(milliseconds within, const std::string& trigger) {
  return waitFor(
      [&](const Json& j) { return isSummary(j) && (trigger.empty() || j["trigger"] == trigger); },
      within);
}

std::optional<int> AgentProcess::waitExit(milliseconds within) {
  const auto deadline = Clock::now() + within;
  while (!exitCode_) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exitCode_ = test::exitCodeOf(status);
      for (bool more = true; more && pump(0, &more);) {
      }
      break;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    // Reads output meanwhile; wakes at least every 20 ms to look at the child.
    if (!pump(std::min(20, remainingMs(deadline)))) {
      ::waitpid(pid_, &status, 0);  // its stderr closed: it is exiting
      exitCode_ = test::exitCodeOf(status);
    }
  }
  return exitCode_;
}

}  // namespace mesh::e2e
