#include "agent/agent.hh"

#include <unistd.h>

#include <atomic>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "agent/core.hh"
#include "agent/drift_watch.hh"
#include "agent/events.hh"
#include "agent/fleet_start.hh"
#include "agent/locked_run.hh"
#include "agent/notify.hh"
#include "agent/schedule.hh"
#include "agent/service_watch.hh"
#include "fleet/node_signed.hh"
#include "state/drift_note.hh"
#include "state/pending_note.hh"
#include "state/state_dir.hh"
#include "util/duration.hh"
#include "util/fd.hh"

namespace mesh::agent {

namespace {

// FleetLink and DriftWatch as the core sees them.
class LinkPort : public FleetPort {
 public:
  explicit LinkPort(FleetLink& link) : link_(link) {}
  const std::string& declarationKey() const override { return link_.declarationKey(); }
  std::optional<AcceptedDeclaration> takeAccepted() override { return link_.takeAccepted(); }
  void publish(fleet::NodeStatus status) override { link_.publish(std::move(status)); }
  apply::RestartGate restartGate(int64_t limit, std::chrono::milliseconds timeout,
                                 const std::atomic<bool>* stop) override {
    return link_.restartGate(limit, timeout, stop);
  }
  void releaseStaleSlots() override { link_.releaseStaleSlots(); }
  void publishReport(fleet::NodeReport r) override { link_.publishReport(std::move(r)); }

 private:
  FleetLink& link_;
};

class WatchPort : public DriftPort {
 public:
  std::map<std::string, std::string> drain() override { return watch_.drain(); }
  void update(const decl::Declaration& d, const std::string& root) override {
    watch_.update(d, root);
  }
  size_t watched() const override { return watch_.watched(); }
  size_t unwatched() const override { return watch_.unwatched(); }
  int fd() const { return watch_.fd(); }

 private:
  DriftWatch watch_;
};

class WatchPortOfServices : public ServicePort {
 public:
  explicit WatchPortOfServices(ServiceWatch& watch) : watch_(watch) {}
  void expect(const decl::Declaration& d) override { watch_.expect(d); }
  void refresh(state::Store& store) override { watch_.refresh(store); }

 private:
  ServiceWatch& watch_;
};

// The loop: waits for events (agent/events.hh), hands them to the core, runs the
// cycles it asks for on a thread of their own, and speaks to etcd and systemd.
class Agent {
 public:
  Agent(const AgentOptions& o, Logger& log)
      : o_(o), log_(log), core_(o, log, notifier_, std::random_device{}()) {}

  int run() {
    Events events(o_.fleet ? "" : o_.declarationPath, notifier_.watchdogPeriod(),
                  state::StateDir{o_.settings.stateDir}.paused());
    // Declared after events (its thread wakes them) and before joinCycle (a cycle
    // may be holding one of its restart slots): destroyed in the right order.
    std::unique_ptr<FleetLink> fleet;
    std::optional<LinkPort> port;
    if (o_.fleet) {
      fleet = std::make_unique<FleetLink>(*o_.fleet, o_.settings.stateDir, log_,
                                          [&events] { events.signalFleet(); });
      port.emplace(*fleet);
      core_.setFleet(&*port);
    }
    fleet_ = fleet.get();
    // The services between cycles: into the fleet status, and their health checks. Before
    // joinCycle: a cycle's end looks through it.
    ServiceWatch services({.stateDir = o_.settings.stateDir,
                           .root = o_.settings.root,
                           .supervisor = o_.settings.supervisor,
                           .unitDir = o_.settings.unitDir,
                           .noteHealth = true,
                           .lookAlways = fleet_ != nullptr},
                          log_, [this](const std::vector<fleet::NodeStatus::Service>& v) {
                            if (fleet_) fleet_->setServices(v);
                          });
    WatchPortOfServices servicesPort(services);
    core_.setServices(&servicesPort);
    // On an error out of the loop, the cycle in hand still ends cleanly first.
    Finally joinCycle([this] {
      core_.stopNow();
      if (worker_.joinable()) worker_.join();
    });
    const std::string source =
        fleet_ ? o_.fleet->endpoint + " " + fleet_->declarationKey() : o_.declarationPath;
    log_.info(
        fmt::format("agent started: {} every {} (+ up to {}), state in {}", source,
                    formatDuration(o_.interval), formatDuration(o_.splay), o_.settings.stateDir),
        {{"declaration", source},
         {"interval_ms", o_.interval.count()},
         {"splay_ms", o_.splay.count()},
         {"state_dir", o_.settings.stateDir},
         {"pid", ::getpid()}});
    if (fleet_) {
      core_.start(fleet_->loadCached());
      startFleetLink();
    } else {
      core_.start(std::nullopt);
    }
    // Fleet mode says READY=1 when the link is up (fleetReadiness), never later than
    // etcd's first failure: not after a first cycle that may wait for restart slots.
    if (!fleet_ && !core_.current())
      notifier_.ready("waiting for a valid declaration at " + source);

    std::optional<WatchPort> drift;
    try {
      drift.emplace();
      events.watchDrift(drift->fd());
      core_.setDrift(&*drift);
    } catch (const Error& e) {
      log_.log(Level::Warning, std::string("drift is repaired at the interval only: ") + e.what());
    }

    while (!core_.done()) {
      if (auto job = core_.nextCycle(Clock::now())) startCycle(events, std::move(*job));
      auto now = Clock::now();
      const Woken w = events.wait(waitMillis(now, {core_.nextDeadline(), nextBeat_}));
      now = Clock::now();
      if (w.terminate) core_.terminate(w.terminate);
      if (w.cycleDone) {
        worker_.join();
        core_.cycleDone(now, std::exchange(result_, {}));
        if (fleet_) fleet_->releaseServices();
      }
      if (w.hangup) core_.hangup();
      if (w.fleet) {
        core_.fleetNews();
        fleetReadiness();
      }
      if (nextBeat_ && now >= *nextBeat_) {
        fleet_->beat();
        nextBeat_ = now + fleet::kHeartbeatPeriod;
      }
      if (w.watchdog) core_.watchdog(now);
      if (w.declarationTouched) core_.declarationTouched(now);
      if (w.drift) core_.driftEvents(now);
      if (w.pause) core_.pauseTouched();
      core_.advance(now);
    }
    if (worker_.joinable()) worker_.join();
    // No agent keeps anything in force any more: the note would outlive its truth.
    if (!fleet_) state::clearDeclarationError(o_.settings.stateDir);
    state::clearDriftNote(o_.settings.stateDir);
    state::clearPendingNote(o_.settings.stateDir);
    if (fleet_) fleet_->stop();
    notifier_.stopping("stopped");
    log_.info("agent stopped");
    return 0;
  }

 private:
  // Fleet mode: publishes what the store says is applied (so that a restarted agent
  // does not show "revision 0" until its first cycle ends), then starts the link and
  // the heartbeats the event loop asks for.
  void startFleetLink() {
    log_.info("node key " + fleet_->publicKeyText() +
                  " (operators enroll it: mesh-host fleet enroll " + o_.fleet->node + " KEY)",
              {{"node_key", fleet_->publicKeyText()}});
    const AcceptedDeclaration* cached = core_.accepted();
    core_.lastStatus() = statusFromStore(o_.settings.stateDir, cached);
    core_.markPlanning(core_.lastStatus(), 0);
    fleet_->publish(core_.lastStatus());
    fleet_->start(cached ? cached->revision : 0);
    nextBeat_ = Clock::now() + fleet::kHeartbeatPeriod;
  }

  void fleetReadiness() {
    if (linkReady_) return;
    if (auto why = fleet_->readiness()) {
      linkReady_ = true;
      core_.linkReady();
      notifier_.ready(*why);
    }
  }

  void startCycle(Events& events, CycleJob job) {
    if (fleet_) fleet_->holdServices();
    worker_ = std::thread([this, &events, job = std::move(job)] {
      try {  // no thread ends the process: what escapes is the cycle's error
        result_ = runLocked(
            o_.settings, job.declaration, core_.stopFlag(),
            [this](const std::string& msg) {
              log_.log(Level::Notice, msg, {{"state_dir", o_.settings.stateDir}});
            },
            job.hooks);
        // The first cycle has brought every service back: slots an earlier agent of
        // this node held for a restart it did not finish can go.
        if (job.releaseStaleSlots && result_.report) fleet_->releaseStaleSlots();
      } catch (const std::exception& e) {
        result_.error = e.what();
      } catch (...) {
        result_.error = "an unknown exception in the cycle's thread";
      }
      events.signalCycleDone();
    });
  }

  const AgentOptions& o_;
  Logger& log_;
  Notifier notifier_;
  AgentCore core_;
  std::thread worker_;
  LockedRun result_;            // written by the worker before it signals; read after join
  FleetLink* fleet_ = nullptr;  // fleet mode only
  std::optional<Clock::time_point> nextBeat_;  // fleet mode: the next heartbeat
  bool linkReady_ = false;                     // fleet mode: READY=1 sent for the link
};

}  // namespace

int runAgent(const AgentOptions& options, Logger& log) {
  Agent agent(options, log);
  return agent.run();
}

}  // namespace mesh::agent
