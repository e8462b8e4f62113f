#include "agent/core.hh"

#include <exception>

#include <malloc.h>
#include <string.h>

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "agent/node_report.hh"
#include "apply/churn.hh"
#include "state/pending_note.hh"
#include "state/store.hh"
#include "util/clock.hh"
#include "util/digest.hh"
#include "util/duration.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::agent {

namespace {

using namespace std::chrono_literals;

}  // namespace

AgentCore::AgentCore(const AgentOptions& o, Logger& log, Notifier& notifier, uint64_t seed)
    : o_(o),
      log_(log),
      notifier_(notifier),
      declaration_(o.declarationPath, o.load),
      random_(seed) {}

const decl::Declaration* AgentCore::current() const {
  if (fleet_) return accepted_ ? &accepted_->declaration : nullptr;
  return declaration_.current();
}

void AgentCore::start(std::optional<AcceptedDeclaration> cached) {
  pause_ = readPauseLogged();
  if (pause_)
    log_.log(Level::Notice, state::pauseText(*pause_) + ": cycles only plan until mesh-host resume",
             {{"paused", pause_->reason}, {"paused_by", pause_->user}});
  if (o_.noop) log_.info("--noop: every cycle only plans; nothing on the node is changed");
  if (fleet_) {
    accepted_ = std::move(cached);
    if (accepted_) {
      log_.info(
          fmt::format("starting with the cached pushed declaration (revision {}, serial "
                      "{}) until etcd says otherwise",
                      accepted_->revision, accepted_->declaration.serial.value_or(0)));
      request("start");
    }
  } else if (reload("start")) {
    request("start");
  }
}

// Loads the declaration again; false (and the error logged) when it is not
// valid, which leaves the last good one in force.
bool AgentCore::reload(const std::string& why) {
  const auto bytes = fileDigest();
  auto r = declaration_.reload();
  rejected_ = r.ok ? "" : bytes;
  declarationError_ = r.ok ? "" : r.error;
  // For `status` and the metrics: the file as it is now does not load.
  if (r.ok)
    state::clearDeclarationError(o_.settings.stateDir);
  else
    state::noteDeclarationError(o_.settings.stateDir, {unixNowMs(), o_.declarationPath, r.error,
                                                       declaration_.current() != nullptr});
  if (r.ok) {
    if (r.changed && why != "start")
      log_.info("declaration changed: " + o_.declarationPath,
                {{"declaration", o_.declarationPath}, {"trigger", why}});
    return true;
  }
  const bool keeping = declaration_.current() != nullptr;
  log_.error(fmt::format("{}\n{}", r.error,
                         keeping ? "mesh-host: the declaration is not valid; the last good one "
                                   "stays in force until it is fixed"
                                 : "mesh-host: no valid declaration yet; nothing is applied "
                                   "until the file is fixed"),
             {{"declaration", o_.declarationPath}, {"trigger", why}, {"kept_last_good", keeping}});
  notifier_.status(fmt::format("declaration not valid ({}), {}", r.error,
                               keeping ? "keeping the last good one" : "waiting for a valid one"));
  return false;
}

void AgentCore::request(const std::string& trigger) {
  if (!trigger_) trigger_ = trigger;
}

void AgentCore::terminate(int signal) {
  // The flag first: once "stopping on" is logged, the cycle in hand stops after the
  // resource it is at (tests wait for the line). What stopped it, before the flag.
  if (!stop_.load()) {
    stopSignal_.store(signal);
    stopAtMs_.store(unixNowMs());
  }
  stop_.store(true);
  if (!stopping_)
    log_.info(fmt::format("stopping on {}{}", sigabbrev_np(signal) ? "SIG" : "",
                          sigabbrev_np(signal) ? sigabbrev_np(signal) : "a signal") +
                  (running_ ? ": finishing the resource in hand" : ""),
              {{"signal", signal}});
  stopping_ = true;
  trigger_.reset();
}

void AgentCore::hangup() {
  if (!fleet_) reload("SIGHUP");
  request("SIGHUP");
}

// A declaration the fleet link accepted: in force from now, cycled at once.
void AgentCore::fleetNews() {
  auto a = fleet_->takeAccepted();
  if (!a) return;
  accepted_ = std::move(*a);
  request(fmt::format("etcd revision {}", accepted_->revision));
}

std::optional<state::Pause> AgentCore::readPauseLogged() {
  try {
    return state::readPause(o_.settings.stateDir);
  } catch (const Error& e) {
    // Unreadable is not "not paused": keep what was in force.
    log_.error(std::string("mesh-host: cannot read the pause: ") + e.what());
    return pause_;
  }
}

void AgentCore::pauseTouched() {
  auto now = readPauseLogged();
  if (now == pause_) return;
  const bool was = pause_.has_value();
  pause_ = std::move(now);
  if (pause_) {
    log_.log(Level::Notice, state::pauseText(*pause_) + ": cycles only plan until mesh-host resume",
             {{"paused", pause_->reason}, {"paused_by", pause_->user}});
    request(was ? "pause changed" : "paused");
  } else {
    log_.log(Level::Notice, "resumed: cycles apply again", {{"paused", nullptr}});
    request("resumed");
  }
}

void AgentCore::markPlanning(fleet::NodeStatus& st, int64_t pending) const {
  st.paused.reset();
  if (pause_)
    st.paused =
        fleet::NodeStatus::Pause{pause_->reason, pause_->user, pause_->uid, pause_->sinceMs};
  st.noop = o_.noop;
  st.pending = pending;
}

void AgentCore::declarationTouched(Clock::time_point now) {
  debounce_.poke(now);
}

void AgentCore::advance(Clock::time_point now) {
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

std::optional<Clock::time_point> AgentCore::nextDeadline() const {
  std::optional<Clock::time_point> out;
  for (const auto& d : {nextPeriodic_, debounce_.deadline(), driftDebounce_.deadline(), driftDue_})
    if (d && (!out || *d < *out)) out = d;
  return out;
}

// The digest of the declaration file's bytes now; "" when it cannot be read.
std::string AgentCore::fileDigest() const {
  try {
    if (auto bytes = readFile(o_.declarationPath)) return Digest::ofBytes(*bytes).str();
  } catch (const Error&) {
  }
  return "";
}

// A cycle never runs a declaration older than the file: when the file changed since it
// was loaded, the cycle waits for the edit's debounce (a burst of writes is not read
// half-way), or, with no edit pending, takes the file in first.
bool AgentCore::waitForEdit() {
  if (fleet_ || !current()) return false;
  const std::string now = fileDigest();
  if (now.empty() || now == current()->digest.str() || now == rejected_) return false;
  if (debounce_.deadline()) return true;
  reload("declaration changed");
  return false;
}

std::optional<CycleJob> AgentCore::nextCycle(Clock::time_point now) {
  if (running_ || stopping_ || !trigger_ || !current()) return std::nullopt;
  if (waitForEdit()) return std::nullopt;
  pauseTouched();  // as it is now, even if its event has not come yet
  running_ = true;
  runningTrigger_ = *trigger_;
  trigger_.reset();
  cycleStarted_ = now;
  hungReported_ = false;
  // Drift seen before now is taken in by this cycle, which reads every resource as
  // it is: a drift cycle still waiting for its burst to be quiet would only find it
  // repaired. (Drift during the cycle is judged after it, by rewatch.) The back-off
  // of a writer that fights back stays: driftNotBefore_ is kept.
  driftDebounce_.clear();
  driftDue_.reset();
  log_.info("cycle starting: " + runningTrigger_, {{"trigger", runningTrigger_}});
  CycleJob job{runningTrigger_,
               *current(),
               {nullptr, o_.afterCycle, nullptr, nullptr, nullptr, nullptr, nullptr},
               false};
  job.hooks.stopCause = [this] {
    const int sig = stopSignal_.load();
    const char* name = sig ? sigabbrev_np(sig) : nullptr;
    return state::CycleStop{0, name ? std::string("SIG") + name : "", stopAtMs_.load()};
  };
  // Paused or --noop: decided again under the state lock (a pause taken while the
  // cycle waits for it holds). Such a cycle only plans; cycleDone publishes it.
  job.hooks.planOnly = [stateDir = o_.settings.stateDir, noop = o_.noop]() -> std::string {
    if (state::readPause(stateDir)) return "paused";
    return noop ? "noop" : "";
  };
  job.hooks.afterPlan = o_.afterPlan;
  if (fleet_)
    fleetHooks(job.hooks);
  else
    job.hooks.newer = appliedByHand();
  if (services_) {
    // The services' counts and runs as this cycle left them: in the status it publishes.
    services_->expect(job.declaration);
    job.hooks.after = [look = services_, inner = std::move(job.hooks.after)](
                          const apply::CycleReport& report, state::Store& store) {
      // The cycle's own hook (the fleet status, metrics) runs whatever the look says.
      std::exception_ptr failed;
      try {
        look->refresh(store);
      } catch (...) {
        failed = std::current_exception();
      }
      if (inner) inner(report, store);
      if (failed) std::rethrow_exception(failed);
    };
  }
  job.releaseStaleSlots = fleet_ && !staleSlotsReleased_;
  staleSlotsReleased_ = staleSlotsReleased_ || job.releaseStaleSlots;
  return job;
}

// Under the state lock: when the newest cycle (a `mesh-host apply` while this one
// waited for the lock) applied the file as it is now, and that is not the declaration
// this cycle was given, the cycle runs the file: it never puts an older declaration
// back over a newer one applied by hand. The file is read only when its bytes are
// those that apply applied in full, never an edit still being written.
LockedRunHooks::Newer AgentCore::appliedByHand() const {
  return
      [load = o_.load, path = o_.declarationPath](
          const decl::Declaration& given, state::Store& store) -> std::optional<decl::Declaration> {
        const auto last = store.lastCycle();
        if (!last) return std::nullopt;
        const auto g = store.generationDeclaration(last->generation);
        if (!g) return std::nullopt;
        const Digest applied = Digest::ofBytes(g->text);
        if (applied == given.digest) return std::nullopt;
        const auto bytes = readFile(path);
        if (!bytes || Digest::ofBytes(*bytes) != applied) return std::nullopt;
        try {
          auto d = load(path);
          if (d.digest == applied) return d;
        } catch (const Error&) {
          // Changed again meanwhile, or no longer loads: the debounce reports it.
        }
        return std::nullopt;
      };
}

// Fleet mode: the cycle caches the pushed declaration it runs (so that the node
// converges to it when etcd is away at its next start), takes restart slots, and
// leaves the node's status for cycleDone to publish.
void AgentCore::fleetHooks(LockedRunHooks& hooks) {
  const AcceptedDeclaration& a = *accepted_;
  hooks.before = [key = fleet_->declarationKey(), revision = a.revision,
                  envelope = a.envelope](state::Store& store) {
    auto cached = store.fleetDeclaration(key);
    if (!cached || cached->revision != revision || cached->envelope != envelope)
      store.putFleetDeclaration({key, revision, envelope, unixNowMs()});
  };
  hooks.after = [this, after = o_.afterCycle, revision = a.revision, serial = a.declaration.serial,
                 digest = a.declaration.digest.str(),
                 trigger = runningTrigger_](const apply::CycleReport& report, state::Store& store) {
    if (after) after(report, store);
    // Only a cycle that ran through applied anything: an interrupted one (SIGTERM)
    // leaves the status published before it, which names the last finished cycle.
    if (report.interrupted) return;
    fleet::NodeStatus st;
    const auto last = store.lastCycle();
    st.generation = last ? last->generation : 0;
    st.serial = serial;
    st.declarationDigest = digest;
    st.revision = revision;
    st.cycle = report.cycle;
    st.lastCycleAtMs = unixNowMs();
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
    if (auto r = nodeReportOf(report, serial, digest)) fleet_->publishReport(std::move(*r));
  };
  const auto slotTimeout = std::max<std::chrono::milliseconds>(o_.interval * 3, 30s);
  hooks.holdRestartSlot = fleet_->restartGate(a.maxParallelRestarts, slotTimeout, &stop_);
}

void AgentCore::cycleDone(Clock::time_point now, LockedRun run) {
  running_ = false;
  if (run.ran) {
    // Applied by hand while the cycle waited for the lock, and run by it: in force.
    if (declaration_.adopt(std::move(*run.ran)))
      log_.info("declaration changed: " + o_.declarationPath + " (applied by hand)",
                {{"declaration", o_.declarationPath}, {"trigger", "apply"}});
    run.ran.reset();
    declarationError_.clear();
    rejected_.clear();
    state::clearDeclarationError(o_.settings.stateDir);
  }
  rewatch(now, run);
  const bool planned = run.report && !run.planned.empty();
  if (fleet_ && planned) {
    // What is applied stays what the last applying cycle applied: only the pause and
    // what waits are new (never this plan's counts, never its cycle).
    if (!run.report->interrupted) {
      const auto& t = run.report->tally;
      markPlanning(lastStatus_, t.created + t.updated + t.removed + t.released);
      fleet_->publish(lastStatus_);
    }
  } else if (fleet_) {
    if (cycleStatus_) {
      lastStatus_ = std::move(*cycleStatus_);
      cycleStatus_.reset();
      fleet_->publish(lastStatus_);
    } else if (!run.error.empty()) {
      lastStatus_.cycleError = run.error;
      markPlanning(lastStatus_, lastStatus_.pending);
      fleet_->publish(lastStatus_);
    }
  }
  nextPeriodic_ = nextPeriodicCycle(now, o_.interval, o_.splay, random_());
  std::string status;
  if (run.report) {
    failBackoff_ = {};
    status = logReport(*run.report, run.planned);
    if (!run.afterCycleError.empty())
      log_.log(Level::Warning, "after the cycle: " + run.afterCycleError,
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
    notifier_.status(status);  // READY=1 is the link's to give
  else
    notifier_.ready(status);
  run = {};
  // What the cycle allocated (records, report, the worker thread's arena) goes
  // back to the system: between cycles the agent holds only what it keeps.
  ::malloc_trim(0);
}

void AgentCore::watchdog(Clock::time_point now) {
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

}  // namespace mesh::agent
