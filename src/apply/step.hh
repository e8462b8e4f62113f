// One resource's step through the cycle: what an applier is handed besides the
// cycle-wide context — the restart causes of a process, the hook that makes what
// a change owes durable before its first act, and what the cycle records for it
// on request (a restart owed to itself, an install claimed). An applier's inputs
// are its arguments: the cycle builds a Step per resource, and nothing is set on
// the context and cleared after.
//
// The gate: every act of a step goes through change() (or changeOwingNothing()),
// closed when planning, so `plan` runs exactly the code `apply` runs.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "apply/context.hh"
#include "util/digest.hh"
#include "util/faults.hh"

namespace mesh::apply {

class Step {
 public:
  // Persists, synced, a restart owed to `process` because its own unit or bundle
  // is about to become `intent` (its want), before that change is made.
  using OweOwnRestart = std::function<void(const std::string& process, const Digest& intent)>;
  // Records (committed) that mesh-host owns what the resource is about to install
  // (a process's unit and bundle): its record gets `observed` before the first
  // write and keeps it whatever follows, so that removal always removes it. A
  // removal's step keeps in the record what its removal owes (a `service`'s
  // restart without its drop-in) the same way.
  using ClaimInstall = std::function<void(const std::string& observed)>;

  // A step with no causes and no hooks: a plan's, a removal that owes nothing, an
  // applier called alone.
  explicit Step(Context& ctx, RestartCauses causes = {}) : ctx_(ctx), causes_(std::move(causes)) {}
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;

  Context& ctx() const { return ctx_; }

  // Why a process must restart (or reload) in this cycle, besides its own state.
  const RestartCauses& causes() const { return causes_; }

  // Runs once, before the first act of this step (the restarts its change owes,
  // written as intents and synced: intent first, then the act).
  void setBeforeFirstChange(std::function<void()> hook) { beforeFirstChange_ = std::move(hook); }
  void setOweOwnRestart(OweOwnRestart f) { oweOwnRestart_ = std::move(f); }
  void setClaimInstall(ClaimInstall f) { claimInstall_ = std::move(f); }

  // The gate: runs `act` only when applying, after the cycle's check before any
  // change and this step's hook before its first change.
  template <typename F>
  void change(F&& act) {
    if (!ctx_.applying()) return;
    ctx_.beforeAnyChange();
    if (beforeFirstChange_) {
      auto hook = std::move(beforeFirstChange_);
      beforeFirstChange_ = nullptr;
      hook();
      crashPoint(crash::kAfterIntent);
    }
    act();
  }
  // The gate for a change that owes no restart to anything (Outcome::restartsDependents
  // false): the same, without the hook that records the restarts a change owes.
  template <typename F>
  void changeOwingNothing(F&& act) {
    ctx_.changeOwingNothing(std::forward<F>(act));
  }

  // No-ops when the cycle gave none (planning, an applier called alone).
  void oweOwnRestart(const std::string& process, const Digest& intent) const {
    if (oweOwnRestart_) oweOwnRestart_(process, intent);
  }
  // Call inside change().
  void claimInstall(const std::string& observed) const {
    if (claimInstall_) claimInstall_(observed);
  }

 private:
  Context& ctx_;
  RestartCauses causes_;
  std::function<void()> beforeFirstChange_;
  OweOwnRestart oweOwnRestart_;
  ClaimInstall claimInstall_;
};

}  // namespace mesh::apply
