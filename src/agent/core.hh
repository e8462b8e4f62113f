// The agent's decisions, apart from epoll, threads and the clock: which triggers
// make a cycle, the debounces, the drift back-off, which declaration a cycle runs,
// and what is published and logged after it. The real agent (agent.cc) drives it
// from its event loop and runs each cycle on a thread; the system simulation
// (tests/sim/system.cc) drives it with a virtual clock and runs each cycle in
// process. Every method is called from one thread; the hooks a CycleJob carries run
// on the cycle's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <string>

#include "agent/agent.hh"
#include "agent/fleet_link.hh"
#include "agent/last_good.hh"
#include "agent/locked_run.hh"
#include "agent/log.hh"
#include "agent/notify.hh"
#include "agent/schedule.hh"
#include "fleet/protocol.hh"
#include "fleet/report.hh"
#include "state/pause.hh"

namespace mesh::agent {

// What the core needs of the fleet link (FleetLink; a model in the simulation).
class FleetPort {
 public:
  virtual ~FleetPort() = default;
  virtual const std::string& declarationKey() const = 0;
  // The newest declaration accepted since the last call, if any.
  virtual std::optional<AcceptedDeclaration> takeAccepted() = 0;
  virtual void publish(fleet::NodeStatus status) = 0;
  // The node report of a cycle that changed or failed something (fleet/report.hh).
  virtual void publishReport(fleet::NodeReport) {}
  virtual apply::RestartGate restartGate(int64_t limit, std::chrono::milliseconds timeout,
                                         const std::atomic<bool>* stop) = 0;
  virtual void releaseStaleSlots() = 0;
};

// What the core needs of the drift watch (DriftWatch; a model in the simulation).
class DriftPort {
 public:
  virtual ~DriftPort() = default;
  virtual std::map<std::string, std::string> drain() = 0;  // id → a path it names
  virtual void update(const decl::Declaration& d, const std::string& root) = 0;
  virtual size_t watched() const = 0;
  virtual size_t unwatched() const = 0;
};

// What the core needs of the look at services (ServiceWatch; none in the simulation).
class ServicePort {
 public:
  virtual ~ServicePort() = default;
  // Before a cycle, on the core's thread: the declaration it runs.
  virtual void expect(const decl::Declaration& d) = 0;
  // After it, on the cycle's thread under the state lock: look again, with its counts.
  virtual void refresh(state::Store& store) = 0;
};

// A cycle the core wants run: runLocked(settings, declaration, stopFlag(), …, hooks);
// then, with releaseStaleSlots and a report, FleetPort::releaseStaleSlots(); then
// cycleDone() with what runLocked returned.
struct CycleJob {
  std::string trigger;
  decl::Declaration declaration;  // a copy: a reload while it runs does not change it
  LockedRunHooks hooks;
  bool releaseStaleSlots = false;
};

// Its parts: core.cc (triggers, the cycle to run, what follows it), core_drift.cc (drift
// events into repairs, and the back-off), core_report.cc (the cycle's log).
class AgentCore {
 public:
  // The debounces and limits (docs/agent.md).
  static constexpr auto kDebounce = std::chrono::milliseconds(200);
  static constexpr auto kDriftQuiet = std::chrono::milliseconds(100);
  static constexpr auto kDriftBusy = std::chrono::seconds(1);
  static constexpr int kDriftFightRepairs = 3;
  static constexpr auto kDriftFight = std::chrono::seconds(1);
  static constexpr auto kHungCycle = std::chrono::minutes(30);

  AgentCore(const AgentOptions& o, Logger& log, Notifier& notifier, uint64_t seed);

  // Fleet mode: the link (null otherwise). Before start().
  void setFleet(FleetPort* fleet) { fleet_ = fleet; }
  FleetPort* fleet() const { return fleet_; }
  // The drift watch, once there is one (null: drift is left to the interval).
  void setDrift(DriftPort* drift) { drift_ = drift; }
  // The look at services between cycles (null: none). Before start().
  void setServices(ServicePort* services) { services_ = services; }

  // The first cycle: the declaration loaded (or, fleet mode, `cached`, the cached
  // pushed declaration) and a cycle asked for.
  void start(std::optional<AcceptedDeclaration> cached);
  // Fleet mode, after start(): what the store says was applied last, to publish
  // before the link starts.
  fleet::NodeStatus& lastStatus() { return lastStatus_; }
  const AcceptedDeclaration* accepted() const { return accepted_ ? &*accepted_ : nullptr; }

  // Events, as the loop sees them.
  void terminate(int signal);
  void hangup();
  void fleetNews();  // the link has accepted a declaration (takeAccepted)
  void declarationTouched(Clock::time_point now);
  void driftEvents(Clock::time_point now);  // the drift watch has events (drain)
  // The pause file may have changed (mesh-host pause / resume): read again; a cycle
  // follows a change (one that plans, while paused, and publishes so).
  void pauseTouched();
  // After the events of a wake-up: the debounces and timers that have passed.
  void advance(Clock::time_point now);
  // The cycle to run now, if one is wanted and none runs; it counts as running until
  // cycleDone().
  std::optional<CycleJob> nextCycle(Clock::time_point now);
  void cycleDone(Clock::time_point now, LockedRun run);
  // The watchdog period has passed: fed, unless a cycle has hung.
  void watchdog(Clock::time_point now);

  // The deadlines the loop must wake for.
  std::optional<Clock::time_point> nextDeadline() const;
  bool running() const { return running_; }
  bool done() const { return stopping_ && !running_; }
  const std::atomic<bool>& stopFlag() const { return stop_; }
  void stopNow() { stop_.store(true); }  // on an error out of the loop
  // The declaration in force (null: none has loaded, or none was accepted).
  const decl::Declaration* current() const;
  const std::string& declarationError() const { return declarationError_; }
  const std::optional<std::string>& pendingTrigger() const { return trigger_; }
  // The pause in force, as last read (state/pause.hh).
  const std::optional<state::Pause>& paused() const { return pause_; }
  // Fills in what a status says of cycles that only plan (paused, --noop).
  void markPlanning(fleet::NodeStatus& st, int64_t pending) const;

 private:
  bool reload(const std::string& why);
  std::string fileDigest() const;
  bool waitForEdit();
  LockedRunHooks::Newer appliedByHand() const;
  void request(const std::string& trigger);
  void fleetHooks(LockedRunHooks& hooks);
  void driftSeen(Clock::time_point now, const std::map<std::string, std::string>& drifted);
  void rewatch(Clock::time_point now, const LockedRun& run);
  void backOff(Clock::time_point now);
  std::string logReport(const apply::CycleReport& report, const std::string& planned);
  std::optional<state::Pause> readPauseLogged();

  const AgentOptions& o_;
  Logger& log_;
  Notifier& notifier_;
  LastGoodDeclaration declaration_;
  FleetPort* fleet_ = nullptr;
  DriftPort* drift_ = nullptr;
  ServicePort* services_ = nullptr;
  Debounce debounce_{kDebounce};
  Debounce driftDebounce_{kDriftQuiet};
  std::optional<Clock::time_point> driftDue_;  // a drift cycle is wanted from then
  std::string driftWhat_;                      // "<id> (<path>)": what drifted
  std::chrono::milliseconds driftBackoff_{0};
  Clock::time_point driftNotBefore_{}, lastDriftRepair_{};
  std::chrono::milliseconds failBackoff_{};  // after cycles that could not run
  Clock::time_point driftFirst_{};           // the first event of the burst being debounced
  int64_t driftRepairs_ = 0;
  int quickRepairs_ = 0;  // drift repairs in a row, each within kDriftFight of the last
  std::map<std::string, std::string> driftDuringCycle_;  // events while a cycle ran
  std::mt19937_64 random_;

  std::string declarationError_;        // the file as it is now does not load
  std::string rejected_;                // the digest of the file's bytes that did not load
  std::optional<std::string> trigger_;  // a cycle is wanted, and why
  std::optional<Clock::time_point> nextPeriodic_;
  std::optional<state::Pause> pause_;  // mesh-host pause, as last read
  bool stopping_ = false;
  std::atomic<bool> stop_{false};  // read by the cycle between resources
  // What set stop_ (0: no signal) and when (unix ms), for the stopped cycle's note;
  // written before stop_, read by the cycle's thread after it.
  std::atomic<int> stopSignal_{0};
  std::atomic<int64_t> stopAtMs_{0};

  bool running_ = false;
  std::string runningTrigger_;
  Clock::time_point cycleStarted_;
  bool hungReported_ = false;

  std::optional<AcceptedDeclaration> accepted_;   // fleet mode: the declaration in force
  std::optional<fleet::NodeStatus> cycleStatus_;  // written by the cycle's hook
  fleet::NodeStatus lastStatus_;                  // the last one published
  bool staleSlotsReleased_ = false;               // fleet mode: done after the first cycle
  bool linkReady_ = false;                        // fleet mode: READY=1 sent for the link

 public:
  // Fleet mode: READY=1 is the link's to give once it is up (agent.cc).
  void linkReady() { linkReady_ = true; }
};

}  // namespace mesh::agent
