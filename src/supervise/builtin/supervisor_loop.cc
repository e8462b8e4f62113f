// The supervisor's plumbing: the lock, the descriptors, the event loop and the
// control connections. What happens to the service is in supervisor_service.cc.
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "supervise/builtin/control.hh"
#include "supervise/builtin/service_supervisor.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::supervise::builtin {

ServiceSupervisor::ServiceSupervisor(SupervisorArgs args)
    : args_(std::move(args)),
      paths_(ServicePaths::inDirs(
          args_.serviceDir, args_.runDir.empty() ? args_.serviceDir : args_.runDir, args_.logPath)),
      log_(args_.logPath, ServiceConfig{}.logMaxBytes),
      notifyDir_(paths_.runDir) {}

int ServiceSupervisor::run() {
  Fd ready(args_.readyFd);
  // Inherited without close-on-exec; the service must not inherit it in turn.
  if (ready) ::fcntl(ready.get(), F_SETFD, FD_CLOEXEC);
  try {
    makeDirs(paths_.runDir, 0755);
    // The runtime directory, not the state directory: that one may be deleted
    // under a running supervisor.
    if (::chdir(paths_.runDir.c_str()) != 0)
      throwSys(fmt::format("cannot enter {}", paths_.runDir));
    // A supervisor of an older mesh-host (its lock in the state directory) may
    // run the service: then it is the one to ask.
    // So may one of the mesh-host before, whose lock was `lock` beside ours.
    if (!acquireLock() || supervisorHoldsLock(oldSupervisorLock(paths_.lock)) ||
        (!paths_.isLegacy() && supervisorHoldsLock(paths_.legacy().lock))) {
      reply(std::move(ready), Reply{Reply::Kind::Busy, 0, ""});
      return 0;
    }
    setUp();
    launchWaiters_.push_back(std::move(ready));
    startUp();
    loop();
  } catch (const std::exception& e) {
    log_.note(fmt::format("giving up: {}", e.what()));
    reply(std::move(ready), Reply::fail(e.what()));
    replyAll(launchWaiters_, Reply::fail(e.what()));
    if (child_ > 0) ::kill(-child_, SIGKILL);
    return 1;
  }
  return exitCode_;
}

bool ServiceSupervisor::acquireLock() {
  // 0600 and never through a link: nobody but this user can open it, so nobody
  // else can hold a lock on it that this supervisor would take for another's.
  lock_ = Fd(::open(paths_.lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock_) throwSys(fmt::format("cannot open {}", paths_.lock));
  struct stat st {};
  if (::fstat(lock_.get(), &st) != 0) throwSys(fmt::format("cannot inspect {}", paths_.lock));
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
    throw Error("refusing {}: not a file of uid {} running the supervisor", paths_.lock,
                ::geteuid());
  if ((st.st_mode & 077) != 0 && ::fchmod(lock_.get(), 0600) != 0)
    throwSys(fmt::format("cannot set the mode of {}", paths_.lock));
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = kLiveByte;
  fl.l_len = 1;
  if (::fcntl(lock_.get(), F_OFD_SETLK, &fl) == 0) return true;
  if (errno == EAGAIN || errno == EACCES) return false;
  throwSys(fmt::format("cannot lock {}", paths_.lock));
}

// Byte kStaleByte of the lock file, held while the status file is behind: an
// observer that finds it asks over the control socket instead ("observe").
void ServiceSupervisor::markStale(bool stale) {
  if (!lock_) return;
  struct flock fl {};
  fl.l_type = stale ? F_WRLCK : F_UNLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = kStaleByte;
  fl.l_len = 1;
  (void)::fcntl(lock_.get(), F_OFD_SETLK, &fl);
}

void ServiceSupervisor::setUp() {
  ::signal(SIGHUP, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) throwSys("cannot block signals");
  signals_ = Fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals_) throwSys("cannot create a signalfd");
  timer_ = Fd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  retry_ = Fd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!timer_ || !retry_) throwSys("cannot create a timerfd");

  // The service writes to a FIFO rather than a pipe: it holds the FIFO open for
  // reading too, so if this supervisor dies its writes never raise SIGPIPE; they
  // wait in the FIFO for the supervisor that adopts it.
  struct stat st {};
  if (::lstat(paths_.output.c_str(), &st) == 0 && !S_ISFIFO(st.st_mode))
    ::unlink(paths_.output.c_str());
  if (::mkfifo(paths_.output.c_str(), 0600) != 0 && errno != EEXIST)
    throwSys(fmt::format("cannot create {}", paths_.output));
  output_ = Fd(::open(paths_.output.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (!output_) throwSys(fmt::format("cannot open {}", paths_.output));
  (void)::fcntl(output_.get(), F_SETPIPE_SZ, 1 << 20);  // more room while unsupervised

  listen_ = listenUnix(paths_.socket);
  epoll_ = Fd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_) throwSys("cannot create an epoll instance");
  for (int fd : {signals_.get(), timer_.get(), retry_.get(), output_.get(), listen_.get()})
    watch(fd);
}

void ServiceSupervisor::watch(int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) throwSys("cannot watch a descriptor");
}

void ServiceSupervisor::armTimer(int64_t us) {
  itimerspec spec{};
  if (us > 0) {
    spec.it_value.tv_sec = us / 1'000'000;
    spec.it_value.tv_nsec = (us % 1'000'000) * 1000;
  }
  if (::timerfd_settime(timer_.get(), 0, &spec, nullptr) != 0) throwSys("cannot set the timer");
}

void ServiceSupervisor::loop() {
  epoll_event events[16];
  while (phase_ != Phase::Done) {
    int n = ::epoll_wait(epoll_.get(), events, 16, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throwSys("cannot wait for events");
    for (int i = 0; i < n && phase_ != Phase::Done; ++i) {
      int fd = events[i].data.fd;
      if (fd == signals_.get()) {
        onSignal();
      } else if (fd == timer_.get()) {
        uint64_t expirations;
        if (::read(timer_.get(), &expirations, sizeof expirations) == sizeof expirations) onTimer();
      } else if (fd == retry_.get()) {
        uint64_t expirations;
        if (::read(retry_.get(), &expirations, sizeof expirations) == sizeof expirations &&
            !recordError_.empty())
          record();
      } else if (fd == output_.get()) {
        onOutput();
      } else if (fd == listen_.get()) {
        onAccept();
      } else if (notify_ && fd == notify_.fd()) {
        onNotify();
      } else if (pidfd_ && fd == pidfd_.get()) {
        checkChild();
      } else if (connections_.count(fd)) {
        onConnection(fd);
      }
    }
  }
}

void ServiceSupervisor::onSignal() {
  signalfd_siginfo si;
  while (phase_ != Phase::Done && ::read(signals_.get(), &si, sizeof si) == sizeof si) {
    if (si.ssi_signo == SIGCHLD)
      checkChild();
    else
      onTerminate(static_cast<int>(si.ssi_signo));
  }
}

// SIGTERM or SIGINT: stop the service and exit, whatever the supervisor was
// waiting for. A stop already under way (its SIGTERM sent) is made final and
// hurried: SIGKILL now, rather than after TimeoutStopSec= (which may be
// infinite).
void ServiceSupervisor::onTerminate(int signo) {
  const char* name = ::sigabbrev_np(signo);
  if (phase_ == Phase::Stopping) {
    afterStop_ = AfterStop::Exit;
    startTimedOut_ = false;
    log_.note(
        fmt::format("received SIG{} while stopping pid {}: SIGKILL", name ? name : "?", child_));
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::kill(-child_, SIGKILL);
    }
    killSent_ = true;
    checkChild();
  } else if (child_ > 0) {
    log_.note(fmt::format("received SIG{}: stopping the service", name ? name : "?"));
    beginStop(AfterStop::Exit);
  } else {
    log_.note(fmt::format("received SIG{}: exiting", name ? name : "?"));
    finish("inactive");
  }
}

void ServiceSupervisor::onOutput() {
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(output_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    log_.serviceOutput(std::string_view(buf, static_cast<size_t>(n)));
  }
}

void ServiceSupervisor::onAccept() {
  for (;;) {
    Fd conn(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!conn) return;
    int fd = conn.get();
    watch(fd);
    connections_[fd] = {std::move(conn), std::string()};
  }
}

void ServiceSupervisor::onConnection(int fd) {
  auto& [conn, buffer] = connections_[fd];
  char buf[256];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n > 0) buffer.append(buf, static_cast<size_t>(n));
  auto nl = buffer.find('\n');
  if (nl == std::string::npos && n > 0 && buffer.size() < 256) return;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
  Fd taken = std::move(conn);
  std::string line = nl == std::string::npos ? std::string() : buffer.substr(0, nl);
  connections_.erase(fd);
  if (!line.empty()) command(line, std::move(taken));
}

void ServiceSupervisor::command(const std::string& cmd, Fd conn) {
  const bool launchVerb = cmd == "start" || cmd == "restart";
  if (cmd == "status") return reply(std::move(conn), Reply::ok(child_, status_.state));
  if (cmd == "observe") {
    // What the status file would say, had it been written: from memory.
    std::string json = status_.render();
    while (!json.empty() && json.back() == '\n') json.pop_back();
    return reply(std::move(conn), Reply::ok(child_, json));
  }
  if (cmd == "reload") return answer(std::move(conn), reloadService());
  if (!launchVerb && cmd != "stop")
    return reply(std::move(conn), Reply::fail(fmt::format("unknown command \"{}\"", cmd)));
  if (phase_ == Phase::Idle || phase_ == Phase::Done)
    return reply(std::move(conn), Reply::fail("the supervisor is shutting down"));
  if (cmd == "start" && phase_ == Phase::Running)
    return answer(std::move(conn), Reply::ok(child_, "running"));
  // A start or restart on request begins a new count of Restart='s own, as
  // systemd's NRestarts does: mesh-host adds the old count to its record first.
  if (launchVerb) status_.crashRestarts = 0;

  // Answered when the launch settles, or when the process is gone.
  (launchVerb ? launchWaiters_ : stopWaiters_).push_back(std::move(conn));
  switch (phase_) {
    case Phase::Running:
    case Phase::Starting:
      if (cmd == "restart" && loadUnit()) beginStop(AfterStop::Relaunch);
      if (cmd == "stop") beginStop(AfterStop::Exit);
      break;
    case Phase::Stopping:
      // A start that timed out is being stopped: a start or restart now hears
      // how that ends (Restart= may start it again); a stop makes it final.
      if (afterStop_ == AfterStop::StartFailed && launchVerb) break;
      afterStop_ = launchVerb ? AfterStop::Relaunch : AfterStop::Exit;
      break;
    case Phase::Backoff:
      if (!launchVerb) {
        finish("inactive");
      } else if (loadUnit()) {
        armTimer(0);
        launch();
      }
      break;
    case Phase::Idle:
    case Phase::Done:
      break;
  }
}

void ServiceSupervisor::reply(Fd conn, const Reply& r) {
  if (conn) writeAll(conn.get(), r.render());
}

void ServiceSupervisor::answer(Fd conn, const Reply& r) {
  reply(std::move(conn), recorded(r));
}

void ServiceSupervisor::replyAll(std::vector<Fd>& waiters, const Reply& r) {
  const Reply said = recorded(r);
  for (auto& w : waiters) reply(std::move(w), said);
  waiters.clear();
}

// Every answer comes only after the state is recorded: one that could not be
// is no success, even though the service did what was asked.
Reply ServiceSupervisor::recorded(const Reply& r) const {
  if (r.kind != Reply::Kind::Ok || recordError_.empty()) return r;
  return Reply::fail(r.pid > 0 ? fmt::format("{} pid {}, but {}", r.detail, r.pid, recordError_)
                               : fmt::format("{}, but {}", r.detail, recordError_));
}

}  // namespace mesh::supervise::builtin
