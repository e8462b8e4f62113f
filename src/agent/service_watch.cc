#include "agent/service_watch.hh"

#include <unistd.h>

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "apply/health_note.hh"
#include "util/clock.hh"

namespace mesh::agent {

namespace {

bool sameCheck(const WatchedService& a, const WatchedService& b) {
  const auto probe = [](const std::optional<Probe>& p) {
    return p ? std::tuple(p->argv, p->uid, p->gid, p->timeout.count())
             : std::tuple(std::vector<std::string>{}, std::optional<uid_t>{},
                          std::optional<gid_t>{}, int64_t{-1});
  };
  return a.unit == b.unit && a.notify == b.notify && a.probeError == b.probeError &&
         a.interval == b.interval && probe(a.probe) == probe(b.probe);
}

}  // namespace

ServiceWatch::ServiceWatch(ServiceWatchOptions o, Logger& log, OnChange onChange)
    : o_(std::move(o)), log_(log), onChange_(std::move(onChange)) {
  thread_ = std::thread([this] {
    try {
      loop();
    } catch (const std::exception& e) {
      log_.error(std::string("the look at services stopped: ") + e.what());
    }
  });
}

ServiceWatch::~ServiceWatch() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (o_.noteHealth) apply::clearHealthNote(o_.stateDir);
}

void ServiceWatch::expect(const decl::Declaration& d) {
  auto services = watchedServices(d, o_.stateDir, o_.root);
  std::lock_guard<std::mutex> guard(mutex_);
  expected_ = std::move(services);
}

void ServiceWatch::refresh(state::Store& store) {
  std::vector<WatchedService> services;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    services = expected_;
  }
  countRestarts(services, store);
  std::lock_guard<std::mutex> guard(mutex_);
  // A service keeps its health across cycles unless what judges it changed (its check,
  // its Type=, its unit): then it is judged afresh, from "starting".
  std::map<std::string, HealthTrack> tracks;
  for (const auto& w : services) {
    auto it = tracks_.find(w.id);
    if (it == tracks_.end()) continue;
    auto old = std::find_if(services_.begin(), services_.end(),
                            [&](const WatchedService& o) { return o.id == w.id; });
    if (old != services_.end() && sameCheck(*old, w)) tracks.emplace(w.id, it->second);
  }
  tracks_ = std::move(tracks);
  services_ = std::move(services);
  lookLocked(WatchClock::now());
  reportLocked();
  wake_.notify_all();
}

void ServiceWatch::lookLocked(WatchClock::time_point now) {
  if (services_.empty()) {
    states_.clear();
    return;
  }
  std::vector<std::string> names;
  for (const auto& w : services_) names.push_back(w.unit);
  try {
    if (!supervisor_)
      supervisor_ = supervise::openSupervisor(o_.supervisor, {o_.stateDir, "", o_.unitDir, ""});
    states_ = supervisor_->observe(names, /*detailed=*/true);
    supervisorError_.clear();
  } catch (const std::exception& e) {
    supervisor_.reset();
    if (supervisorError_ != e.what())
      log_.log(Level::Warning, std::string("cannot look at the services: ") + e.what());
    supervisorError_ = e.what();
    return;  // what was seen last stands
  }
  for (const auto& w : services_) seeRun(tracks_[w.id], w, states_[w.unit], now);
}

void ServiceWatch::reportLocked() {
  std::vector<fleet::NodeStatus::Service> now;
  std::map<std::string, apply::HealthSeen> health;
  for (const auto& w : services_) {
    const auto& t = tracks_[w.id];
    now.push_back(serviceStatus(w, states_[w.unit], t));
    if (w.checked()) health[w.id] = {t.health, t.reason, t.runSinceUs < 0 ? 0 : t.runSinceUs};
  }
  if (o_.noteHealth && health != noted_) {
    for (const auto& [id, h] : health)
      if (auto it = logged_.find(id);
          (it == logged_.end() || it->second.health != h.health) && !h.health.empty())
        log_.log(
            h.health == "unhealthy" ? Level::Warning : Level::Info,
            fmt::format("{}: {}{}", id, h.health, h.reason.empty() ? "" : " (" + h.reason + ")"),
            {{"id", id}, {"health", h.health}});
    logged_ = health;
    if (health.empty())
      apply::clearHealthNote(o_.stateDir);
    else
      apply::noteHealth(o_.stateDir, {static_cast<int64_t>(::getpid()), unixNowMs(), health});
    // Kept as noted once written: a note that could not be (a full disk) is written
    // again next turn; each change was logged above, once.
    noted_ = health;
  }
  if (reportedOnce_ && now == reported_) return;
  // Kept as reported once handed over: what onChange could not take, it is handed again.
  if (onChange_) onChange_(now);
  reported_ = std::move(now);
  reportedOnce_ = true;
}

void ServiceWatch::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  auto nextLook = WatchClock::now() + kLookEvery;
  while (!stopping_) {
    // The next thing due: a look, or a running service's check.
    auto until = nextLook;
    for (const auto& w : services_)
      if (w.probe && tracks_[w.id].running) until = std::min(until, tracks_[w.id].due);
    wake_.wait_until(lock, until, [&] { return stopping_; });
    if (stopping_) break;
    // A turn that fails (the health note on a full disk, the fleet status refused) is
    // logged once and the watch goes on: ended, it would never look at the services
    // or run a check again while the agent lives.
    try {
      turn(lock, nextLook);
      turnError_.clear();
    } catch (const std::exception& e) {
      if (!lock.owns_lock()) lock.lock();
      if (turnError_ != e.what())
        log_.log(Level::Warning, std::string("the look at the services failed, tried again in ") +
                                     std::to_string(kLookEvery.count()) + " s: " + e.what());
      turnError_ = e.what();
      nextLook = std::min(nextLook, WatchClock::now() + kLookEvery);
    }
  }
}

void ServiceWatch::turn(std::unique_lock<std::mutex>& lock, WatchClock::time_point& nextLook) {
  auto now = WatchClock::now();
  if (now >= nextLook) {
    if (o_.lookAlways || std::any_of(services_.begin(), services_.end(),
                                     [](const WatchedService& w) { return w.checked(); }))
      lookLocked(now);
    nextLook = now + kLookEvery;
  }
  // The checks due, each run without the lock (a cycle's refresh does not wait for one).
  for (size_t k = 0; k < services_.size() && !stopping_; ++k) {
    const WatchedService w = services_[k];
    auto& t = tracks_[w.id];
    if (!w.probe || !t.running || t.due > now) continue;
    const int64_t run = t.runSinceUs;
    t.due = now + w.interval;  // not again before it is done
    lock.unlock();
    const ProbeResult r = runProbe(*w.probe);
    lock.lock();
    now = WatchClock::now();
    if (auto it = tracks_.find(w.id);
        it != tracks_.end() && k < services_.size() && services_[k].id == w.id)
      checked(it->second, w, run, r, now);
  }
  reportLocked();
}

}  // namespace mesh::agent
