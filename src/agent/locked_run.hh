// One cycle as the agent runs it: under the state lock (so `apply` and the
// agent never interleave), on a fresh store handle and context, stoppable
// between resources.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "apply/context.hh"
#include "apply/cycle.hh"
#include "decl/model.hh"
#include "state/stop_note.hh"
#include "state/store.hh"

namespace mesh::agent {

struct LockedRun {
  std::optional<apply::CycleReport> report;  // none: the cycle did not run
  std::string error;                         // why it did not (empty: stopped first)
  std::string afterCycleError;               // the after-cycle hook failed (metrics …)
  // The declaration the cycle ran instead of the one it was given (hooks.newer).
  std::optional<decl::Declaration> ran;
  // Why the cycle only planned ("paused", "noop"; hooks.planOnly), "" when it applied. A
  // planning cycle changed nothing and recorded nothing: its report is what apply would
  // do (cycle 0), never to be published or kept as applied.
  std::string planned;
};

// Called after the cycle, still under the state lock, with its store (metrics).
using AfterCycle = std::function<void(const apply::CycleReport&, state::Store&)>;

struct LockedRunHooks {
  // Before the cycle, under the state lock (fleet mode caches the declaration).
  std::function<void(state::Store&)> before;
  AfterCycle after;
  // Context::holdRestartSlot for this cycle (fleet mode's rolling restarts).
  apply::RestartGate holdRestartSlot;
  // Under the state lock, before the cycle: a declaration newer than the one given
  // (one applied by hand while this cycle waited for the lock), which the cycle runs
  // instead; nullopt to run the one given.
  using Newer = std::function<std::optional<decl::Declaration>(const decl::Declaration& given,
                                                               state::Store& store)>;
  Newer newer;
  // Who asked the cycle to stop and when (its cycle number left 0), for the note a
  // cycle stopped early leaves (state/stop_note.hh); unset: no signal named, now.
  std::function<state::CycleStop()> stopCause;
  // Under the state lock, before the cycle: why it must only plan ("paused", "noop"),
  // "" to apply. Decided there so that a pause taken while the cycle waited for the
  // lock holds. A planning cycle runs `afterPlan` instead of `after`.
  std::function<std::string()> planOnly;
  AfterCycle afterPlan;
};

// Never throws: an error that stops the whole cycle (the store cannot be
// opened …) comes back in `error`, and the agent tries again next time.
// `waiting` is called once when another mesh-host holds the state lock. An error
// thrown by hooks.before ends the cycle like a store error; one thrown by
// hooks.after comes back in afterCycleError. A cycle that stopped early on `stop`
// is noted as stopped (state/stop_note.hh) before hooks.after. A planning cycle
// (hooks.planOnly) leaves its pending changes in <stateDir>/pending
// (state/pending_note.hh) before hooks.afterPlan; a cycle that applied in full
// removes that note.
LockedRun runLocked(const apply::Settings& settings, const decl::Declaration& declaration,
                    const std::atomic<bool>& stop,
                    const std::function<void(const std::string&)>& waiting,
                    const LockedRunHooks& hooks);

}  // namespace mesh::agent
