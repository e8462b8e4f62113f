#include "agent/agent.hh"

#include <malloc.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "agent/drift_watch.hh"
#include "agent/duration.hh"
#include "agent/events.hh"
#include "agent/fleet_start.hh"
#include "agent/locked_run.hh"
#include "agent/notify.hh"
#include "agent/schedule.hh"
#include "apply/churn.hh"
#include "fleet/node_signed.hh"
#include "state/drift_note.hh"
#include "state/store.hh"
#include "util/fd.hh"

namespace mesh::agent {

namespace {

using namespace std::chrono_literals;

constexpr auto kDebounce = 200ms;
// Drift events are acted on once they have been quiet this long.
constexpr auto kDriftQuiet = 100ms;
constexpr auto kDriftBusy = 1s;
// Drift repaired this many times in a row, each within kDriftFight of the one before,
// is a fight: the repairs back off.
constexpr int kDriftFightRepairs = 3;
constexpr auto kDriftFight = 1s;
// A cycle running longer than this is taken as hung: the watchdog is no longer
// fed, so systemd restarts the agent (a cut cycle is safe: every write is atomic
// and owed restarts are recorded first).
constexpr auto kHungCycle = 30min;

Level levelOf(apply::Verdict v) {
  switch (v) {
    case apply::Verdict::Failed:
      return Level::Error;
    case apply::Verdict::Skipped:
      return Level::Warning;
    case apply::Verdict::Unchanged:
      return Level::Info;
    default:
      return Level::Notice;
  }
}

class Agent {
 public:
  Agent(const AgentOptions& o, Logger& log)
      : o_(o),
        log_(log),
        declaration_(o.declarationPath, o.load),
        random_(std::random_device{}()) {}

  int run() {
    Events events(o_.fleet ? "" : o_.declarationPath, notifier_.watchdogPeriod());
    // Declared after events (its thread wakes them) and before joinCycle (a cycle
    // may be holding one of its restart slots): destroyed in the right order.
    std::unique_ptr<FleetLink> fleet;
    if (o_.fleet)
      fleet = std::make_unique<FleetLink>(*o_.fleet, o_.settings.stateDir, log_,
                                          [&events] { events.signalFleet(); });
    fleet_ = fleet.get();
    // On an error out of the loop, the cycle in hand still ends cleanly first.
    Finally joinCycle([this] {
      stop_.store(true);
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
      accepted_ = fleet_->loadCached();
      if (accepted_) {
        log_.info(
            fmt::format("starting with the cached pushed declaration (revision {}, serial "
                        "{}) until etcd says otherwise",
                        accepted_->revision, accepted_->declaration.serial.value_or(0)));
        request("start");
      }
      startFleetLink();
    } else if (reload("start")) {
      request("start");
    }
    // Fleet mode says READY=1 when the link is up (fleetReadiness), never later than
    // etcd's first failure: not after a first cycle that may wait for restart slots.
    if (!fleet_ && !current()) notifier_.ready("waiting for a valid declaration at " + source);

    try {
      drift_.emplace();
      events.watchDrift(drift_->fd());
    } catch (const Error& e) {
      log_.log(
          Level::Warning,
          std::string("mesh-host: warning: drift is repaired at the interval only: ") + e.what());
    }

    while (!(stopping_ && !running_)) {
      if (!running_ && !stopping_ && trigger_ && current()) startCycle(events);
      auto now = Clock::now();
      const Woken w = events.wait(waitMillis(now, {nextPeriodic_, debounce_.deadline(), nextBeat_,
                                                   driftDebounce_.deadline(), driftDue_}));
      now = Clock::now();
      if (w.terminate) stop(w.terminate);
      if (w.cycleDone) finishCycle(now);
      if (w.hangup) {
        if (!fleet_) reload("SIGHUP");
        request("SIGHUP");
      }
      if (w.fleet) {
        takePushed();
        fleetReadiness();
      }
      if (nextBeat_ && now >= *nextBeat_) {
        fleet_->beat();
        nextBeat_ = now + fleet::kHeartbeatPeriod;
      }
      if (w.watchdog) feedWatchdog(now);
      if (w.declarationTouched) debounce_.poke(now);
      if (w.drift) noteDrift(now);
      // Quiet for kDriftQuiet, or busy for kDriftBusy: a writer that never stops is met.
      const bool busy = driftDebounce_.deadline() && now - driftFirst_ >= kDriftBusy;
      if (driftDebounce_.take(now) || busy) {
        driftDebounce_.clear();
        driftDue_ = std::max(now, driftNotBefore_);
      }
      if (driftDue_ && now >= *driftDue_ && !running_) {
        driftDue_.reset();
        request("drift: " + driftWhat_);
      }
      if (debounce_.take(now)) {
        // A broken edit still gets a cycle (of the last good declaration, so a
        // no-op): the metrics it writes then say the declaration is not valid.
        if (reload("declaration changed"))
          request("declaration changed");
        else if (declaration_.current())
          request("declaration not valid: the last good one");
      }
      if (nextPeriodic_ && now >= *nextPeriodic_) {
        nextPeriodic_.reset();  // set again when the cycle ends
        request("interval");
      }
    }
    if (worker_.joinable()) worker_.join();
    // No agent keeps anything in force any more: the note would outlive its truth.
    if (!fleet_) state::clearDeclarationError(o_.settings.stateDir);
    state::clearDriftNote(o_.settings.stateDir);
    if (fleet_) fleet_->stop();
    notifier_.stopping("stopped");
    log_.info("agent stopped");
    return 0;
  }

 private:
  const decl::Declaration* current() const {
    if (fleet_) return accepted_ ? &accepted_->declaration : nullptr;
    return declaration_.current();
  }

  // Fleet mode: publishes what the store says is applied (so that a restarted agent
  // does not show "revision 0" until its first cycle ends), then starts the link and
  // the heartbeats the event loop asks for.
  void startFleetLink() {
    log_.info("node key " + fleet_->publicKeyText() +
                  " (operators enroll it: mesh-host fleet enroll " + o_.fleet->node + " KEY)",
              {{"node_key", fleet_->publicKeyText()}});
    lastStatus_ = statusFromStore(o_.settings.stateDir, accepted_ ? &*accepted_ : nullptr);
    fleet_->publish(lastStatus_);
    fleet_->start(accepted_ ? accepted_->revision : 0);
    nextBeat_ = Clock::now() + fleet::kHeartbeatPeriod;
  }

  void fleetReadiness() {
    if (linkReady_) return;
    if (auto why = fleet_->readiness()) {
      linkReady_ = true;
      notifier_.ready(*why);
    }
  }

  // A declaration the fleet link accepted: in force from now, cycled at once.
  void takePushed() {
    auto a = fleet_->takeAccepted();
    if (!a) return;
    accepted_ = std::move(*a);
    request(fmt::format("etcd revision {}", accepted_->revision));
  }

  // Loads the declaration again; false (and the error logged) when it is not
  // valid, which leaves the last good one in force.
  bool reload(const std::string& why) {
    auto r = declaration_.reload();
    declarationError_ = r.ok ? "" : r.error;
    // For `status` and the metrics: the file as it is now does not load.
    if (r.ok)
      state::clearDeclarationError(o_.settings.stateDir);
    else
      state::noteDeclarationError(
          o_.settings.stateDir,
          {apply::nowMs(), o_.declarationPath, r.error, declaration_.current() != nullptr});
    if (r.ok) {
      if (r.changed && why != "start")
        log_.info("declaration changed: " + o_.declarationPath,
                  {{"declaration", o_.declarationPath}, {"trigger", why}});
      return true;
    }
    const bool keeping = declaration_.current() != nullptr;
    log_.error(
        fmt::format("{}\n{}", r.error,
                    keeping ? "mesh-host: the declaration is not valid; the last good one "
                              "stays in force until it is fixed"
                            : "mesh-host: no valid declaration yet; nothing is applied "
                              "until the file is fixed"),
        {{"declaration", o_.declarationPath}, {"trigger", why}, {"kept_last_good", keeping}});
    notifier_.status(
        fmt::format("declaration not valid ({}), {}", r.error,
                    keeping ? "keeping the last good one" : "waiting for a valid one"));
    return false;
  }

  void request(const std::string& trigger) {
    if (!trigger_) trigger_ = trigger;
  }

  void startCycle(Events& events) {
    running_ = true;
    runningTrigger_ = *trigger_;
    trigger_.reset();
    cycleStarted_ = Clock::now();
    hungReported_ = false;
    // Drift seen before now is taken in by this cycle, which reads every resource as
    // it is: a drift cycle still waiting for its burst to be quiet would only find it
    // repaired. (Drift during the cycle is judged after it, by rewatch.) The back-off
    // of a writer that fights back stays: driftNotBefore_ is kept.
    driftDebounce_.clear();
    driftDue_.reset();
    log_.info("cycle starting: " + runningTrigger_, {{"trigger", runningTrigger_}});
    LockedRunHooks hooks{nullptr, o_.afterCycle, nullptr};
    if (fleet_) fleetHooks(hooks);
    // The thread gets its own copy: a reload while it runs must not change it.
    const bool releaseStale = fleet_ && !staleSlotsReleased_;
    staleSlotsReleased_ = staleSlotsReleased_ || releaseStale;
    worker_ =
        std::thread([this, &events, decl = *current(), hooks = std::move(hooks), releaseStale] {
          try {  // no thread ends the process: what escapes is the cycle's error
            result_ = runLocked(
                o_.settings, decl, stop_,
                [this](const std::string& msg) {
                  log_.log(Level::Notice, msg, {{"state_dir", o_.settings.stateDir}});
                },
                hooks);
            // The first cycle has brought every service back: slots an earlier agent of
            // this node held for a restart it did not finish can go.
            if (releaseStale && result_.report) fleet_->releaseStaleSlots();
          } catch (const std::exception& e) {
            result_.error = e.what();
          } catch (...) {
            result_.error = "an unknown exception in the cycle's thread";
          }
          events.signalCycleDone();
        });
  }

  // Fleet mode: the cycle caches the pushed declaration it runs (so that the node
  // converges to it when etcd is away at its next start), takes restart slots, and
  // leaves the node's status for finishCycle to publish.
  void fleetHooks(LockedRunHooks& hooks) {
    const AcceptedDeclaration& a = *accepted_;
    hooks.before = [key = fleet_->declarationKey(), revision = a.revision,
                    envelope = a.envelope](state::Store& store) {
      auto cached = store.fleetDeclaration(key);
      if (!cached || cached->revision != revision || cached->envelope != envelope)
        store.putFleetDeclaration({key, revision, envelope, apply::nowMs()});
    };
    hooks.after = [this, after = o_.afterCycle, revision = a.revision,
                   serial = a.declaration.serial, digest = a.declaration.digest.str(),
                   trigger = runningTrigger_](const apply::CycleReport& report,
                                              state::Store& store) {
      fleet::NodeStatus st;
      const auto last = store.lastCycle();
      st.generation = last ? last->generation : 0;
      st.serial = serial;
      st.declarationDigest = digest;
      st.revision = revision;
      st.cycle = report.cycle;
      st.lastCycleAtMs = apply::nowMs();
      st.cycleMs = report.ms;
      st.trigger = trigger;
      st.created = report.tally.created;
      st.updated = report.tally.updated;
      st.unchanged = report.tally.unchanged;
      st.removed = report.tally.removed;
      st.released = report.tally.released;
      st.skipped = report.tally.skipped;
      st.failed = report.tally.failed;
      for (const auto& r : report.results)
        if (r.outcome.notConverged()) st.failing.emplace_back(r.id, r.outcome.reason());
      for (const auto& [id, churn] : apply::computeChurn(store.history("", 0), report.cycle))
        if (churn.churning) st.churning.push_back(id);
      cycleStatus_ = std::move(st);
      if (after) after(report, store);
    };
    const auto slotTimeout = std::max<std::chrono::milliseconds>(o_.interval * 3, 30s);
    hooks.holdRestartSlot = fleet_->restartGate(a.maxParallelRestarts, slotTimeout, &stop_);
  }

  // Managed paths changed: drift, repaired once the burst is quiet for kDriftQuiet (and
  // the back-off allows). Events while a cycle runs are kept for rewatch().
  void noteDrift(Clock::time_point now) {
    auto drifted = drift_->drain();
    if (running_) {
      driftDuringCycle_.merge(drifted);
      return;
    }
    if (!drifted.empty()) driftSeen(now, drifted);
  }

  void driftSeen(Clock::time_point now, const std::map<std::string, std::string>& drifted) {
    const auto& [id, path] = *drifted.begin();
    driftWhat_ = fmt::format("{} ({})", id, path);
    if (drifted.size() > 1) driftWhat_ += fmt::format(" and {} more", drifted.size() - 1);
    if (!driftDebounce_.deadline()) driftFirst_ = now;
    driftDebounce_.poke(now);
  }

  // After each cycle. Events during it on what it did not change are someone else's:
  // drift. On what it changed they are mostly its own writes — dropped, except after a
  // repair by event, where an outside writer may have put its content back meanwhile: one
  // check cycle follows, a no-op unless someone wrote. A repair that keeps being undone
  // (an outside writer that fights back) backs off.
  void rewatch(Clock::time_point now, const LockedRun& run) {
    if (!drift_) return;
    auto during = std::exchange(driftDuringCycle_, {});
    during.merge(drift_->drain());
    if (current()) drift_->update(*current(), o_.settings.root);
    const bool repair =
        runningTrigger_.starts_with("drift: ") && run.report && run.report->anyChange();
    if (repair) backOff(now);
    std::set<std::string> changed;
    if (!during.empty() && run.report)
      for (const auto& r : run.report->results)
        if (r.outcome.changed() || r.outcome.gone()) changed.insert(r.id);
    std::map<std::string, std::string> outside;
    for (const auto& [id, path] : during)
      if (repair || !changed.count(id)) outside.emplace(id, path);
    state::noteDrift(o_.settings.stateDir, {apply::nowMs(), static_cast<int64_t>(drift_->watched()),
                                            static_cast<int64_t>(drift_->unwatched()),
                                            driftRepairs_, driftBackoff_.count()});
    if (outside.empty()) return;
    driftSeen(now, outside);
  }

  // A drift cycle repaired something.
  void backOff(Clock::time_point now) {
    ++driftRepairs_;
    const bool again = now - lastDriftRepair_ < driftBackoff_ + kDriftFight;
    lastDriftRepair_ = now;
    quickRepairs_ = again ? quickRepairs_ + 1 : 0;
    if (quickRepairs_ < kDriftFightRepairs) {
      driftBackoff_ = {};
      driftNotBefore_ = now;
      return;
    }
    const auto cap = std::chrono::duration_cast<std::chrono::milliseconds>(o_.interval);
    driftBackoff_ =
        std::min(cap, driftBackoff_.count() ? driftBackoff_ * 2 : std::chrono::milliseconds(1000));
    driftNotBefore_ = now + driftBackoff_;
    log_.log(Level::Warning,
             fmt::format("mesh-host: warning: {}: repaired again soon after the last repair (an "
                         "outside writer fights it); the next repair by event waits {} ms",
                         runningTrigger_, driftBackoff_.count()),
             {{"trigger", runningTrigger_}, {"backoff_ms", driftBackoff_.count()}});
  }

  void finishCycle(Clock::time_point now) {
    worker_.join();
    running_ = false;
    LockedRun run = std::move(result_);
    result_ = {};
    rewatch(now, run);
    if (fleet_) {
      if (cycleStatus_) {
        lastStatus_ = std::move(*cycleStatus_);
        cycleStatus_.reset();
        fleet_->publish(lastStatus_);
      } else if (!run.error.empty()) {
        lastStatus_.cycleError = run.error;
        fleet_->publish(lastStatus_);
      }
    }
    nextPeriodic_ = nextPeriodicCycle(now, o_.interval, o_.splay, random_());
    std::string status;
    if (run.report) {
      failBackoff_ = {};
      status = logReport(*run.report);
      if (!run.afterCycleError.empty())
        log_.log(Level::Warning, "mesh-host: warning: after the cycle: " + run.afterCycleError,
                 {{"cycle", run.report->cycle}});
    } else if (!run.error.empty()) {
      // Drift keeps coming (a busy writer) while no cycle can run (a full state
      // directory): cycles by event back off, 1 s doubling up to the interval,
      // instead of failing every kDriftBusy. A cycle that runs ends it.
      failBackoff_ =
          std::min(std::chrono::duration_cast<std::chrono::milliseconds>(o_.interval),
                   failBackoff_.count() ? failBackoff_ * 2 : std::chrono::milliseconds(1000));
      driftNotBefore_ = std::max(driftNotBefore_, now + failBackoff_);
      status = "cycle could not run: " + run.error;
      log_.error(fmt::format("mesh-host: {}; the next cycle by event waits {} ms", status,
                             failBackoff_.count()),
                 {{"trigger", runningTrigger_}, {"backoff_ms", failBackoff_.count()}});
    } else {
      status = "cycle skipped: stopping";
      log_.info(status, {{"trigger", runningTrigger_}});
    }
    if (!declarationError_.empty())
      status += "; the declaration is not valid, the last good one stays in force";
    if (fleet_ && !linkReady_)
      notifier_.status(status);  // READY=1 is the link's to give (fleetReadiness)
    else
      notifier_.ready(status);
    run = {};
    // What the cycle allocated (records, report, the worker thread's arena) goes
    // back to the system: between cycles the agent holds only what it keeps.
    ::malloc_trim(0);
  }

  // Logs the cycle's outcomes (changes, or all with -v) and its summary; returns
  // the summary line.
  std::string logReport(const apply::CycleReport& report) {
    for (const auto& r : report.results)
      if (!r.outcome.warning.empty())
        log_.log(Level::Warning, fmt::format("warning: {}: {}", r.id, r.outcome.warning),
                 {{"cycle", report.cycle}, {"id", r.id}});
    for (const auto& r : report.results) {
      const auto verdict = r.outcome.verdict();
      if (!o_.verbose && verdict == apply::Verdict::Unchanged) continue;
      log_.log(levelOf(verdict), o_.outcomeLine(r),
               {{"cycle", report.cycle},
                {"id", r.id},
                {"module", r.module},
                {"kind", r.kind},
                {"outcome", apply::verdictName(verdict)},
                {"reason", r.outcome.reason()},
                {"restarted", r.outcome.restarted}});
    }
    std::string summary = o_.summaryLine(report);
    if (report.interrupted) summary += " (interrupted: stopping)";
    log_.log(report.anyFailed() ? Level::Warning : Level::Info, summary,
             {{"cycle", report.cycle},
              {"trigger", runningTrigger_},
              {"created", report.tally.created},
              {"updated", report.tally.updated},
              {"unchanged", report.tally.unchanged},
              {"removed", report.tally.removed},
              {"released", report.tally.released},
              {"skipped", report.tally.skipped},
              {"failed", report.tally.failed},
              {"ms", report.ms},
              {"interrupted", report.interrupted}});
    return summary;
  }

  void stop(int signal) {
    if (!stopping_)
      log_.info(fmt::format("stopping on {}{}", sigabbrev_np(signal) ? "SIG" : "",
                            sigabbrev_np(signal) ? sigabbrev_np(signal) : "a signal") +
                    (running_ ? ": finishing the resource in hand" : ""),
                {{"signal", signal}});
    stopping_ = true;
    stop_.store(true);
    trigger_.reset();
  }

  void feedWatchdog(Clock::time_point now) {
    if (running_ && now - cycleStarted_ > kHungCycle) {
      if (!hungReported_)
        log_.error(
            fmt::format("mesh-host: cycle running for over {}; no longer feeding the "
                        "watchdog",
                        formatDuration(kHungCycle)));
      hungReported_ = true;
      return;
    }
    notifier_.watchdog();
  }

  const AgentOptions& o_;
  Logger& log_;
  LastGoodDeclaration declaration_;
  Notifier notifier_;
  Debounce debounce_{kDebounce};
  // Drift by event (agent/drift_watch.hh): none when inotify could not be had.
  std::optional<DriftWatch> drift_;
  Debounce driftDebounce_{kDriftQuiet};
  std::optional<Clock::time_point> driftDue_;  // a drift cycle is wanted from then
  std::string driftWhat_;                      // "<id> (<path>)": what drifted
  std::chrono::milliseconds driftBackoff_{0};
  Clock::time_point driftNotBefore_{}, lastDriftRepair_{};
  std::chrono::milliseconds failBackoff_{};  // after cycles that could not run
  Clock::time_point driftFirst_{};           // the first event of the burst being debounced
  int64_t driftRepairs_ = 0;
  int quickRepairs_ = 0;
  std::map<std::string, std::string>
      driftDuringCycle_;  // events while a cycle ran  // drift repairs in a row,
                          // each within kDriftFight of the last
  std::mt19937_64 random_;

  std::string declarationError_;        // the file as it is now does not load
  std::optional<std::string> trigger_;  // a cycle is wanted, and why
  std::optional<Clock::time_point> nextPeriodic_;
  bool stopping_ = false;
  std::atomic<bool> stop_{false};  // read by the cycle between resources

  bool running_ = false;
  std::string runningTrigger_;
  Clock::time_point cycleStarted_;
  bool hungReported_ = false;
  std::thread worker_;
  LockedRun result_;  // written by the worker before it signals; read after join

  FleetLink* fleet_ = nullptr;                    // fleet mode only
  std::optional<AcceptedDeclaration> accepted_;   // fleet mode: the declaration in force
  std::optional<fleet::NodeStatus> cycleStatus_;  // written by the worker, like result_
  fleet::NodeStatus lastStatus_;                  // the last one published
  std::optional<Clock::time_point> nextBeat_;     // fleet mode: the next heartbeat
  bool linkReady_ = false;                        // fleet mode: READY=1 sent for the link
  bool staleSlotsReleased_ = false;               // fleet mode: done after the first cycle
};

}  // namespace

int runAgent(const AgentOptions& options, Logger& log) {
  Agent agent(options, log);
  return agent.run();
}

}  // namespace mesh::agent
