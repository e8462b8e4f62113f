#include "agent/locked_run.hh"

#include <chrono>
#include <thread>

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
    if (hooks.newer) run.ran = hooks.newer(declaration, store);
    const decl::Declaration& d = run.ran ? *run.ran : declaration;
    apply::Context ctx(settings);
    ctx.setStopFlag(&stop);
    ctx.holdRestartSlot = hooks.holdRestartSlot;
    run.report = apply::runCycle(ctx, d, d.text, &store);
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
