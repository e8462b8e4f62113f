// The starts, restarts and reloads of a cycle, made last, in declaration order:
// by then every file they read is in place, every unit is installed, and a
// backend that must reload does so once, before the first of them. Then the
// settle rule (Supervisor::settle): every service started or restarted must stay
// up for the settle time — all of them settled together, in one window — or it
// failed. An outcome that activates is held (Settlement) until then.
#pragma once

#include <string>
#include <vector>

#include "apply/context.hh"
#include "apply/cycle.hh"
#include "apply/cycle/pending.hh"
#include "apply/cycle/settlement.hh"
#include "decl/model.hh"
#include "state/store.hh"

namespace mesh::apply::cycle {

class Activator {
 public:
  Activator(Context& ctx, state::Store* store, Settlement& settlement)
      : ctx_(ctx), store_(store), settlement_(settlement) {}

  // `p`'s outcome, recorded once started (or reloaded).
  void await(Pending p, ResourceResult&& r) {
    settlement_.hold(std::move(r));
    pending_.push_back(std::move(p));
  }

  // Service users' access to their bundles, after every resource (a `user`
  // resource has made its user) and before any start, said in `report`.
  void keepAccess(const decl::Declaration& d, CycleReport& report);
  // Every start, restart and reload awaited, then the settle window; each outcome
  // recorded once final.
  void activate();

 private:
  void failActivation(Outcome& o, const Pending& p, const std::string& why, bool made);

  Context& ctx_;
  state::Store* store_;
  Settlement& settlement_;
  std::vector<Pending> pending_;
};

}  // namespace mesh::apply::cycle
