#include "agent/locked_run.hh"

#include <chrono>
#include <thread>

#include "state/lock.hh"
#include "state/pending_note.hh"
#include "util/clock.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::agent {

namespace {

// The state lock, polled so that a SIGTERM while `apply` holds it ends the
// agent at once instead of after that apply.
std::optional<state::StateLock> lockState(const std::string& stateDir,
                                          const std::atomic<bool>& stop,
                                          const std::function<void(const std::string&)>& waiting) {
  bool said = false;
  while (!stop.load()) {
    auto lock = state::StateLock::tryAcquire(stateDir, state::StateLock::Kind::Exclusive);
    if (lock) return lock;
    if (!said) waiting(fmt::format("waiting for another mesh-host using {}", stateDir));
    said = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return std::nullopt;
}

// What a planning cycle would change, for `status` and the metrics.
state::PendingNote pendingOf(const apply::CycleReport& report, const std::string& why) {
  state::PendingNote n;
  n.at = unixNowMs();
  n.why = why;
  n.failed = report.tally.failed;
  for (const auto& r : report.results)
    if (const auto v = r.outcome.verdict();
        v == apply::Verdict::Created || v == apply::Verdict::Updated ||
        v == apply::Verdict::Removed || v == apply::Verdict::Released)
      n.changes.push_back({r.id, apply::verdictName(r.outcome.verdict()), r.outcome.reason()});
  return n;
}

}  // namespace

LockedRun runLocked(const apply::Settings& settings, const decl::Declaration& declaration,
                    const std::atomic<bool>& stop,
                    const std::function<void(const std::string&)>& waiting,
                    const LockedRunHooks& hooks) {
  LockedRun run;
  try {
    makeDirs(settings.stateDir, 0750);
    auto lock = lockState(settings.stateDir, stop, waiting);
    if (!lock) return run;
    auto store = state::Store::open(settings.stateDir);
    if (hooks.before) {
      try {
        hooks.before(store);
      } catch (const std::exception& e) {
        // No cycle began (fleet mode: caching the pushed declaration failed on a full
        // state directory): `status` says why, as for a cycle that could not finish.
        state::noteCycleError(settings.stateDir, e.what());
        throw;
      }
    }
    if (hooks.planOnly) run.planned = hooks.planOnly();
    if (!run.planned.empty()) {
      // Paused or noop: the same cycle with the gate closed. Nothing on the node and
      // nothing in the store changes; what it would do is noted for status.
      apply::Settings planning = settings;
      planning.plan = true;
      apply::Context ctx(planning);
      ctx.setStopFlag(&stop);
      run.report = apply::runCycle(ctx, declaration, declaration.text, &store);
      if (!run.report->interrupted)
        state::notePending(settings.stateDir, pendingOf(*run.report, run.planned));
      if (hooks.afterPlan) {
        try {
          hooks.afterPlan(*run.report, store);
        } catch (const std::exception& e) {
          run.afterCycleError = e.what();
        }
      }
      return run;
    }
    if (hooks.newer) run.ran = hooks.newer(declaration, store);
    const decl::Declaration& d = run.ran ? *run.ran : declaration;
    apply::Context ctx(settings);
    ctx.setStopFlag(&stop);
    ctx.holdRestartSlot = hooks.holdRestartSlot;
    run.report = apply::runCycle(ctx, d, d.text, &store);
    if (!run.report->interrupted) state::clearPendingNote(settings.stateDir);
    // Stopped on request, not killed: said before anything else can fail.
    if (run.report->interrupted) {
      state::CycleStop why = hooks.stopCause ? hooks.stopCause() : state::CycleStop{};
      why.cycle = run.report->cycle;
      if (why.at == 0) why.at = unixNowMs();
      state::noteCycleStopped(settings.stateDir, why);
    }
    if (hooks.after) {
      try {
        hooks.after(*run.report, store);
      } catch (const std::exception& e) {
        run.afterCycleError = e.what();
      }
    }
  } catch (const std::exception& e) {
    run.error = e.what();
  }
  return run;
}

}  // namespace mesh::agent
