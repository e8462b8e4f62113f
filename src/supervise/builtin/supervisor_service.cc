// The service's life under the supervisor: start (or adopt), settle — or for
// Type=notify wait for READY=1 — run, exit, restart per Restart= with backoff,
// stop with SIGTERM then SIGKILL.
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>

#include "supervise/builtin/service_supervisor.hh"
#include "supervise/builtin/spawn_service.hh"
#include "util/digest.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::supervise::builtin {

namespace {

constexpr const char* kReadyTimeout = "timeout waiting for READY=1";

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

void ServiceSupervisor::startUp() {
  if (tryAdopt()) {
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

bool ServiceSupervisor::tryAdopt() {
  auto old = readStatus(paths_.status);
  if (!old || old->pid <= 0 || !processIsAlive(old->pid, old->startTicks)) return false;
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, old->pid, 0)));
  // Checked again once the pidfd pins the pid: it must still be that same process.
  if (!pidfd || !processIsAlive(old->pid, old->startTicks)) return false;
  ::fcntl(pidfd.get(), F_SETFD, FD_CLOEXEC);
  status_ = *old;
  child_ = old->pid;
  adopted_ = true;
  pidfd_ = std::move(pidfd);
  watch(pidfd_.get());
  childStartMono_ = old->sinceUs > 0
                        ? monotonicUs() - std::max<int64_t>(0, realtimeUs() - old->sinceUs)
                        : monotonicUs();
  // For TimeoutStopSec=, Restart= and Type=; defaults when it is unusable.
  (void)loadUnit(false);
  log_.note(fmt::format("adopted pid {}, left running by a previous supervisor", child_));
  if (config_.type == ServiceType::Notify) {
    // Its NOTIFY_SOCKET names the same address: it is heard again. One that
    // had not sent READY=1 yet (and runs this very unit, so it is a notify
    // service) gets TimeoutStartSec= from now.
    try {
      openNotifySocket();
    } catch (const std::exception& e) {
      log_.note(e.what());
    }
    if (old->state == "starting" && old->unitDigest == Digest::ofBytes(unitText_).str()) {
      phase_ = Phase::Starting;
      armTimer(config_.timeoutStartUs == kInfinity ? 0 : config_.timeoutStartUs);
      setState("starting");
      return true;
    }
  }
  phase_ = Phase::Running;
  setState("active");
  return true;
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
    if (notify) openNotifySocket();
    pid = spawnService(config_, output_.get(), notify ? notify_.address() : "");
  } catch (const std::exception& e) {
    log_.note(e.what());
    status_.lastExit = e.what();
    return finish("failed", e.what());
  }
  child_ = pid;
  adopted_ = false;
  killSent_ = false;
  startTimedOut_ = false;
  childStartMono_ = monotonicUs();
  status_.pid = pid;
  status_.startTicks = processStartTicks(pid).value_or(0);
  status_.sinceUs = notify ? 0 : realtimeUs();  // notify: set by READY=1
  status_.statusText.clear();
  status_.unitDigest = Digest::ofBytes(unitText_).str();
  phase_ = Phase::Starting;
  if (notify) {
    log_.note(fmt::format("started pid {}; waiting for READY=1 on {}", pid, notify_.address()));
    armTimer(config_.timeoutStartUs == kInfinity ? 0 : config_.timeoutStartUs);
  } else {
    log_.note(fmt::format("started pid {}", pid));
    armTimer(kSettleUs);
  }
  setState("starting");
}

void ServiceSupervisor::openNotifySocket() {
  notify_ = NotifySocket::bind(notifySocketAddress(paths_.dir, config_.user.empty()));
  watch(notify_.fd());
}

void ServiceSupervisor::onNotify() {
  bool changed = false, ready = false;
  for (auto& d : notify_.receiveAll()) {
    if (!notifySenderAccepted(d.sender, child_, config_.notifyAccess)) {
      // A few are noted, so that a wrong NotifyAccess= shows; a flood is not.
      if (++refusedNotifications_ <= 5)
        log_.note(fmt::format("ignored a notification from pid {}: not a process of the service",
                              d.sender));
      continue;
    }
    auto m = parseNotifyMessage(d.text);
    if (m.status && *m.status != status_.statusText) {
      status_.statusText = std::move(*m.status);
      changed = true;
    }
    ready = ready || m.ready;
  }
  if (ready && phase_ == Phase::Starting && config_.type == ServiceType::Notify)
    becomeReady();
  else if (changed)
    setState(status_.state);
}

void ServiceSupervisor::becomeReady() {
  phase_ = Phase::Running;
  armTimer(0);
  status_.sinceUs = realtimeUs();
  log_.note(fmt::format("pid {} is ready (READY=1)", child_));
  setState("active");
  replyAll(launchWaiters_, Reply::ok(child_, adopted_ ? "adopted" : "started"));
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

void ServiceSupervisor::reapChildren() {
  if (child_ > 0 && !adopted_) {
    siginfo_t si{};
    if (::waitid(P_PID, static_cast<id_t>(child_), &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        si.si_pid == child_) {
      // Leftovers of its process group die with it; done before reaping, while
      // the group id cannot yet be reused.
      ::kill(-child_, SIGKILL);
      int ws = 0;
      ::waitpid(child_, &ws, 0);
      onChildExit({true, ws});
    }
  }
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

void ServiceSupervisor::onChildExit(ChildExit e) {
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
  try {
    writeStatus(paths_.status, status_);
  } catch (const std::exception& e) {
    log_.note(fmt::format("cannot record the status: {}", e.what()));
  }
}

}  // namespace mesh::supervise::builtin
