// The service's life under the supervisor: start, settle — or for Type=notify
// wait for READY=1 (supervisor_notify.cc) — run, exit, restart per Restart=
// with backoff, stop with SIGTERM then SIGKILL. Taking over a process a previous
// supervisor left running is supervisor_adopt.cc.
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>

#include "supervise/builtin/service_supervisor.hh"
#include "supervise/builtin/spawn_service.hh"
#include "util/digest.hh"
#include "util/error.hh"
#include "util/fs.hh"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace mesh::supervise::builtin {

namespace {

constexpr const char* kReadyTimeout = "timeout waiting for READY=1";

// The wait status waitpid() would have given, from what waitid() says.
int waitStatusOf(const siginfo_t& si) {
  switch (si.si_code) {
    case CLD_EXITED:
      return (si.si_status & 0xff) << 8;
    case CLD_KILLED:
      return si.si_status & 0x7f;
    case CLD_DUMPED:
      return (si.si_status & 0x7f) | 0x80;
    default:
      return 0;
  }
}

std::string describeExit(int waitStatus, bool known) {
  if (!known) return "exited (status unknown: adopted, not a child of this supervisor)";
  if (WIFEXITED(waitStatus)) return fmt::format("exited with status {}", WEXITSTATUS(waitStatus));
  int sig = WTERMSIG(waitStatus);
  const char* name = ::sigabbrev_np(sig);
  return fmt::format("killed by signal {} ({}){}", sig, name ? name : "?",
                     WCOREDUMP(waitStatus) ? ", core dumped" : "");
}

std::string formatDelay(int64_t us) {
  return us % 1'000'000 == 0 ? fmt::format("{}s", us / 1'000'000)
                             : fmt::format("{}ms", (us + 999) / 1000);
}

}  // namespace

Fd openPidfd(pid_t pid) {
  Fd fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (fd) ::fcntl(fd.get(), F_SETFD, FD_CLOEXEC);
  return fd;
}

void ServiceSupervisor::startUp() {
  const bool adopted = tryAdopt();
  // Read by tryAdopt(); from now on this supervisor's records are the ones.
  if (adopted || !args_.adoptOnly) retireLegacyRecords();
  linkStatusIntoServiceDir(paths_);
  if (adopted) {
    // One adopted while it was still starting answers once it is ready — but
    // a stop (adoptOnly) need not wait for that.
    if (phase_ == Phase::Running || args_.adoptOnly)
      replyAll(launchWaiters_, Reply::ok(child_, "adopted"));
    return;
  }
  if (args_.adoptOnly) {
    replyAll(launchWaiters_, Reply::ok(0, "none"));
    phase_ = Phase::Done;
    return;
  }
  status_ = Status{};
  if (!loadUnit(false)) return finish("failed", status_.lastExit);
  launch();
}

bool ServiceSupervisor::loadUnit(bool tellWaiters) {
  try {
    auto text = readFile(paths_.unit);
    if (!text) throw Error("{} is missing: install the unit first", paths_.unit);
    config_ = parseServiceConfig(parseServiceSection(*text));
    unitText_ = std::move(*text);
    log_.setMaxBytes(config_.logMaxBytes);
    return true;
  } catch (const std::exception& e) {
    std::string reason = fmt::format("bad unit: {}", e.what());
    log_.note(reason);
    status_.lastExit = reason;
    if (tellWaiters) replyAll(launchWaiters_, Reply::fail(reason));
    return false;
  }
}

void ServiceSupervisor::launch() {
  const bool notify = config_.type == ServiceType::Notify;
  pid_t pid = 0;
  try {
    log_.forgetLastServiceLine();
    // A fresh socket for each process: nothing an earlier one sent is left in it.
    if (notify_) ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, notify_.fd(), nullptr);
    notify_ = NotifySocket();
    notifyDir_ = paths_.runDir;
    if (notify) openNotifySocket();
    pid = spawnService(config_, output_.get(), notify ? notify_.address() : "");
  } catch (const std::exception& e) {
    log_.note(e.what());
    status_.lastExit = e.what();
    return finish("failed", e.what());
  }
  child_ = pid;
  adopted_ = false;
  // Its pidfd: the one process this supervisor waits for. The pid cannot be
  // reused before we reap it, so opening it after fork() is safe. Without
  // pidfds (Linux < 5.3), SIGCHLD and waitid(P_PID) do the same.
  pidfd_ = openPidfd(pid);
  if (pidfd_) watch(pidfd_.get());
  killSent_ = false;
  startTimedOut_ = false;
  childStartMono_ = monotonicUs();
  status_.pid = pid;
  status_.startTicks = processStartTicks(pid).value_or(0);
  status_.sinceUs = notify ? 0 : realtimeUs();  // notify: set by READY=1
  status_.statusText.clear();
  status_.note.clear();
  status_.unitDigest = Digest::ofBytes(unitText_).str();
  phase_ = Phase::Starting;
  if (notify) {
    log_.note(fmt::format("started pid {}; waiting for READY=1 on {}", pid, notify_.address()));
    armTimer(config_.timeoutStartUs == kInfinity ? 0 : config_.timeoutStartUs);
  } else {
    log_.note(fmt::format("started pid {}", pid));
    armTimer(kSettleMinUs);
  }
  setState("starting");
}

void ServiceSupervisor::beginStop(AfterStop after) {
  afterStop_ = after;
  phase_ = Phase::Stopping;
  killSent_ = false;
  log_.note(fmt::format("stopping pid {} (SIGTERM)", child_));
  // The whole process group, so a shell wrapper's children go too; the main pid
  // directly as well, in case it left the group.
  ::kill(child_, SIGTERM);
  ::kill(-child_, SIGTERM);
  ::kill(-child_, SIGCONT);
  armTimer(config_.timeoutStopUs == kInfinity ? 0 : std::max<int64_t>(1, config_.timeoutStopUs));
  setState("stopping");
}

void ServiceSupervisor::onTimer() {
  switch (phase_) {
    case Phase::Starting:
      if (config_.type == ServiceType::Notify) {
        // systemd's Result=timeout: stopped as a stop would (SIGTERM, then
        // SIGKILL after TimeoutStopSec=); its exit fails the start.
        log_.note(fmt::format("pid {} did not send READY=1 within {}: stopping it", child_,
                              formatDelay(config_.timeoutStartUs)));
        startTimedOut_ = true;
        beginStop(AfterStop::StartFailed);
        break;
      }
      if (const int64_t lived = monotonicUs() - childStartMono_;
          lived < kSettleUs && !processIsIdle(child_)) {
        armTimer(std::min(kSettleStepUs, kSettleUs - lived));  // busy yet: look again
        break;
      }
      phase_ = Phase::Running;
      setState("active");
      replyAll(launchWaiters_, Reply::ok(child_, "started"));
      break;
    case Phase::Stopping:
      if (!killSent_) {
        log_.note(fmt::format("pid {} did not stop within {}: SIGKILL", child_,
                              formatDelay(config_.timeoutStopUs)));
        ::kill(child_, SIGKILL);
        ::kill(-child_, SIGKILL);
        killSent_ = true;
      }
      break;
    case Phase::Backoff:
      ++status_.crashRestarts;
      launch();
      break;
    default:
      break;
  }
}

Reply ServiceSupervisor::reloadService() {
  if (phase_ != Phase::Running || child_ <= 0)
    return Reply::fail(fmt::format("it is not running ({})", status_.state));
  // The unit the process was started with: a changed unit restarts it instead.
  if (config_.reload.argv.empty()) {
    if (::kill(child_, SIGHUP) != 0)
      return Reply::fail(
          fmt::format("cannot send SIGHUP to pid {}: {}", child_, std::strerror(errno)));
    log_.note(fmt::format("reload: sent SIGHUP to pid {}", child_));
    return Reply::ok(child_, "reloaded");
  }
  ServiceConfig rc = config_;
  rc.argv = config_.reload.argv;
  rc.execPath = config_.reload.execPath;
  rc.substitute = config_.reload.substitute;
  rc.environment.emplace_back("MAINPID", std::to_string(child_));
  pid_t pid = 0;
  try {
    pid = spawnService(rc, output_.get());
  } catch (const std::exception& e) {
    log_.note(fmt::format("reload: {}", e.what()));
    return Reply::fail(fmt::format("ExecReload: {}", e.what()));
  }
  // Waited for here, this one process only: the supervisor answers nothing else
  // meanwhile, and a reload that outlasts TimeoutStartSec= is killed and fails.
  Fd pidfd = openPidfd(pid);
  if (pidfd) {
    const int64_t us = config_.timeoutStartUs;
    const int ms = us == kInfinity ? -1 : static_cast<int>(std::min<int64_t>(us / 1000, INT_MAX));
    pollfd p{pidfd.get(), POLLIN, 0};
    int r;
    do r = ::poll(&p, 1, ms);
    while (r < 0 && errno == EINTR);
    if (r == 0) ::kill(-pid, SIGKILL);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::kill(-pid, SIGKILL);  // what it left in its process group
  const bool ok = WIFEXITED(status) && (WEXITSTATUS(status) == 0 || config_.reload.ignoreFailure);
  if (!ok) {
    const std::string why = WIFEXITED(status)
                                ? fmt::format("exit status {}", WEXITSTATUS(status))
                                : fmt::format("killed by signal {}", WTERMSIG(status));
    log_.note(fmt::format("reload: ExecReload failed: {}", why));
    return Reply::fail(fmt::format("ExecReload failed: {}", why));
  }
  log_.note(fmt::format("reload: ExecReload done (pid {} runs on)", child_));
  return Reply::ok(child_, "reloaded");
}

void ServiceSupervisor::checkChild() {
  if (child_ <= 0) return;
  if (adopted_) {
    // Not our child: no status to collect. Its pidfd becomes readable when it
    // exits.
    if (!pidfd_) return;
    pollfd p{pidfd_.get(), POLLIN, 0};
    if (::poll(&p, 1, 0) != 1) return;
    ::kill(-child_, SIGKILL);  // leftovers of its process group
    return onChildExit({});
  }
  // Only this process is waited for — never "any child" — so its exit status
  // cannot be taken by anyone else.
  siginfo_t si{};
  idtype_t type = pidfd_ ? static_cast<idtype_t>(P_PIDFD) : P_PID;
  id_t id = pidfd_ ? static_cast<id_t>(pidfd_.get()) : static_cast<id_t>(child_);
  int r = ::waitid(type, id, &si, WEXITED | WNOHANG | WNOWAIT);
  if (r != 0 && errno == EINVAL && type != P_PID) {
    // Linux 5.3 has pidfd_open() but not waitid(P_PIDFD): its pid, then.
    type = P_PID;
    id = static_cast<id_t>(child_);
    r = ::waitid(type, id, &si, WEXITED | WNOHANG | WNOWAIT);
  }
  if (r != 0 || si.si_pid != child_) return;
  // Leftovers of its process group die with it; done before reaping, while
  // the group id cannot yet be reused.
  ::kill(-child_, SIGKILL);
  siginfo_t reaped{};
  while (::waitid(type, id, &reaped, WEXITED) != 0 && errno == EINTR) {
  }
  onChildExit({true, waitStatusOf(si)});
}

void ServiceSupervisor::onChildExit(ChildExit e) {
  if (pidfd_) {
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, pidfd_.get(), nullptr);
    pidfd_.reset();
  }
  onOutput();  // what it wrote before exiting is in the FIFO already
  log_.flushPartial();
  // Likewise what it sent: a READY=1 sent just before exiting still counts.
  if (notify_) onNotify();
  const pid_t pid = child_;
  std::string how = describeExit(e.waitStatus, e.known);
  bool bySignal = e.known && WIFSIGNALED(e.waitStatus);
  bool clean = false;
  if (e.known && WIFEXITED(e.waitStatus))
    clean = WEXITSTATUS(e.waitStatus) == 0 || config_.ignoreFailure;
  if (bySignal) {
    int sig = WTERMSIG(e.waitStatus);
    clean = sig == SIGHUP || sig == SIGINT || sig == SIGTERM || sig == SIGPIPE;
  }
  child_ = 0;
  adopted_ = false;
  status_.pid = 0;
  status_.startTicks = 0;
  status_.lastExit = startTimedOut_ ? fmt::format("{}, then {}", kReadyTimeout, how) : how;
  armTimer(0);
  log_.note(fmt::format("pid {} {}", pid, how));

  switch (phase_) {
    case Phase::Stopping:
      if (afterStop_ == AfterStop::Relaunch) return launch();
      if (afterStop_ == AfterStop::StartFailed)
        return afterCrash(false, false, kReadyTimeout, true);
      return finish(startTimedOut_ ? "failed" : "inactive", startTimedOut_ ? kReadyTimeout : "");
    case Phase::Starting: {
      std::string reason = how;
      if (config_.type == ServiceType::Notify) {
        // Gone before READY=1, whatever its status: systemd's Result=protocol.
        reason += " before READY=1";
        clean = false;
      }
      if (!log_.lastServiceLine().empty()) reason += ": " + log_.lastServiceLine();
      return afterCrash(clean, bySignal, reason);
    }
    default:
      return afterCrash(clean, bySignal, "");
  }
}

void ServiceSupervisor::afterCrash(bool clean, bool bySignal, const std::string& startFailure,
                                   bool timedOut) {
  bool again = false;
  switch (config_.restart) {
    case RestartPolicy::No:
      again = false;
      break;
    case RestartPolicy::Always:
      again = true;
      break;
    case RestartPolicy::OnSuccess:
      again = clean;
      break;
    case RestartPolicy::OnFailure:
      again = !clean;
      break;
    case RestartPolicy::OnAbnormal:
      again = !clean && (bySignal || timedOut);
      break;
    case RestartPolicy::OnAbort:
      again = !clean && bySignal;
      break;
  }
  if (!again) return finish(clean ? "inactive" : "failed", startFailure);

  // A service that keeps dying young waits twice as long each time, up to
  // kMaxBackoffUs; one that ran a while starts over at RestartSec=.
  bool quick = monotonicUs() - childStartMono_ < kQuickCrashUs;
  quickCrashes_ = quick ? quickCrashes_ + 1 : 1;
  const int64_t cap = std::max(kMaxBackoffUs, config_.restartUs);
  int64_t delay = std::max<int64_t>(1, config_.restartUs);
  for (int i = 1; i < quickCrashes_ && delay < cap; ++i) delay = std::min(cap, delay * 2);
  phase_ = Phase::Backoff;
  log_.note(fmt::format("restarting in {}", formatDelay(delay)));
  armTimer(delay);
  setState("backoff");
  if (!startFailure.empty()) replyAll(launchWaiters_, Reply::fail(startFailure));
}

void ServiceSupervisor::finish(const std::string& state, const std::string& startFailure) {
  phase_ = Phase::Done;
  child_ = 0;
  status_.pid = 0;
  status_.startTicks = 0;
  setState(state);
  // Let a new supervisor in before anyone hears that this one is done: a client
  // acting on the reply must find the lock free.
  struct flock fl {};
  fl.l_type = F_UNLCK;
  fl.l_whence = SEEK_SET;
  ::fcntl(lock_.get(), F_OFD_SETLK, &fl);
  lock_.reset();
  replyAll(stopWaiters_, Reply::ok(0, "stopped"));
  if (!startFailure.empty())
    replyAll(launchWaiters_, Reply::fail(startFailure));
  else
    replyAll(launchWaiters_,
             Reply::fail(status_.lastExit.empty() ? "stopped before it started"
                                                  : "stopped: " + status_.lastExit));
  exitCode_ = state == "failed" ? 1 : 0;
}

void ServiceSupervisor::setState(const std::string& state) {
  status_.state = state;
  status_.supervisorPid = ::getpid();
  record();
}

// A status that cannot be written (a full disk) is not shrugged off: the
// answers say so (recorded()), observers are told to ask over the control
// socket instead (the stale byte of the lock), and the write is tried again
// every kRecordRetryUs until it succeeds.
void ServiceSupervisor::record() {
  std::string error;
  try {
    writeStatus(paths_.status, status_);
  } catch (const SysError& e) {
    error = fmt::format("cannot record the status in {}: {} (errno {})", paths_.status,
                        std::strerror(e.err()), e.err());
  } catch (const std::exception& e) {
    error = fmt::format("cannot record the status in {}: {}", paths_.status, e.what());
  }
  itimerspec spec{};
  if (error.empty()) {
    if (recordError_.empty()) return;
    recordError_.clear();
    markStale(false);
    if (retry_) ::timerfd_settime(retry_.get(), 0, &spec, nullptr);
    log_.note(fmt::format("the status is recorded in {} again", paths_.status));
    return;
  }
  if (recordError_.empty()) log_.note(error);
  recordError_ = error;
  markStale(true);
  if (retry_) {
    spec.it_value.tv_sec = kRecordRetryUs / 1'000'000;
    spec.it_value.tv_nsec = (kRecordRetryUs % 1'000'000) * 1000;
    spec.it_interval = spec.it_value;
    ::timerfd_settime(retry_.get(), 0, &spec, nullptr);
  }
}

}  // namespace mesh::supervise::builtin
