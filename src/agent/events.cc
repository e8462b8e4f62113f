#include "agent/events.hh"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::agent {

namespace {

sigset_t agentSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

// Every event that can mean "the file now has other content": written and
// closed, renamed over (editors, atomic writers), created, or removed.
constexpr uint32_t kWatchMask =
    IN_CLOSE_WRITE | IN_MODIFY | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB;

void addToEpoll(int epoll, int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (::epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &ev) != 0) throwSys("cannot add to the epoll set");
}

}  // namespace

Events::Events(const std::string& declarationPath, std::chrono::microseconds watchdogPeriod,
               const std::string& pausePath)
    : fileName_(baseName(declarationPath)), pauseName_(baseName(pausePath)) {
  sigset_t set = agentSignals();
  if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) throwSys("cannot block signals");
  epoll_ = Fd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_) throwSys("cannot create an epoll set");
  signals_ = Fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals_) throwSys("cannot create a signalfd");
  addToEpoll(epoll_.get(), signals_.get());

  if (!declarationPath.empty() || !pausePath.empty()) {
    inotify_ = Fd(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
    if (!inotify_) throwSys("cannot create an inotify instance");
    addToEpoll(epoll_.get(), inotify_.get());
  }
  if (!declarationPath.empty()) {
    const std::string dir = parentOf(declarationPath);
    declarationWatch_ = ::inotify_add_watch(inotify_.get(), dir.c_str(), kWatchMask);
    if (declarationWatch_ < 0)
      throwSys(fmt::format("cannot watch {} (the declaration's directory)", dir));
  }
  if (!pausePath.empty()) {
    // Written by temp file and rename, removed by unlink: no IN_MODIFY, so that the
    // store's own writes beside it wake nobody.
    const std::string dir = parentOf(pausePath);
    pauseWatch_ = ::inotify_add_watch(
        inotify_.get(), dir.c_str(),
        IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB);
    if (pauseWatch_ < 0)
      throwSys(fmt::format("cannot watch {} (the state directory, for mesh-host pause)", dir));
  }

  cycleDone_ = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!cycleDone_) throwSys("cannot create an eventfd");
  addToEpoll(epoll_.get(), cycleDone_.get());
  fleet_ = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!fleet_) throwSys("cannot create an eventfd");
  addToEpoll(epoll_.get(), fleet_.get());

  if (watchdogPeriod.count() > 0) {
    watchdog_ = Fd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    if (!watchdog_) throwSys("cannot create a timerfd");
    itimerspec spec{};
    spec.it_value.tv_sec = watchdogPeriod.count() / 1'000'000;
    spec.it_value.tv_nsec = (watchdogPeriod.count() % 1'000'000) * 1000;
    if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;
    spec.it_interval = spec.it_value;
    if (::timerfd_settime(watchdog_.get(), 0, &spec, nullptr) != 0)
      throwSys("cannot arm the watchdog timer");
    addToEpoll(epoll_.get(), watchdog_.get());
  }
}

Events::~Events() = default;

void Events::watchDrift(int fd) {
  drift_ = fd;
  addToEpoll(epoll_.get(), fd);
}

Woken Events::wait(int timeoutMs) {
  Woken w;
  epoll_event ready[8];
  int n = ::epoll_wait(epoll_.get(), ready, 8, timeoutMs);
  if (n < 0) {
    if (errno == EINTR) return w;
    throwSys("epoll_wait");
  }
  for (int i = 0; i < n; ++i) {
    const int fd = ready[i].data.fd;
    if (fd == signals_.get()) readSignals(w);
    if (inotify_ && fd == inotify_.get()) readInotify(w);
    if (fd == drift_) w.drift = true;
    if (fd == cycleDone_.get() || fd == fleet_.get()) {
      uint64_t count = 0;
      if (::read(fd, &count, sizeof count) == sizeof count)
        (fd == fleet_.get() ? w.fleet : w.cycleDone) = true;
    }
    if (watchdog_ && fd == watchdog_.get()) {
      uint64_t expirations = 0;
      if (::read(fd, &expirations, sizeof expirations) == sizeof expirations) w.watchdog = true;
    }
  }
  return w;
}

void Events::readSignals(Woken& w) {
  signalfd_siginfo info{};
  while (::read(signals_.get(), &info, sizeof info) == sizeof info) {
    if (info.ssi_signo == SIGHUP) w.hangup = true;
    if (info.ssi_signo == SIGTERM || info.ssi_signo == SIGINT)
      w.terminate = static_cast<int>(info.ssi_signo);
  }
}

void Events::readInotify(Woken& w) {
  alignas(inotify_event) char buf[8192];
  for (;;) {
    ssize_t n = ::read(inotify_.get(), buf, sizeof buf);
    if (n <= 0) return;
    for (ssize_t at = 0; at < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + at);
      // The directory itself went away (IN_IGNORED) counts too: the file is gone.
      const bool all = ev->mask & IN_Q_OVERFLOW;
      const bool gone = ev->mask & IN_IGNORED;
      if (declarationWatch_ >= 0 && (ev->wd == declarationWatch_ || all))
        if ((ev->len > 0 && fileName_ == ev->name) || gone || all) w.declarationTouched = true;
      if (pauseWatch_ >= 0 && (ev->wd == pauseWatch_ || all))
        if ((ev->len > 0 && pauseName_ == ev->name) || gone || all) w.pause = true;
      at += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  }
}

namespace {
void poke(const Fd& fd) {
  const uint64_t one = 1;
  // A full counter (impossible: the loop reads it) would still wake the loop.
  if (::write(fd.get(), &one, sizeof one) < 0) {
  }
}
}  // namespace

void Events::signalCycleDone() {
  poke(cycleDone_);
}
void Events::signalFleet() {
  poke(fleet_);
}

}  // namespace mesh::agent
