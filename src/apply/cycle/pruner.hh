// What goes because it is no longer declared, or no longer where it was: the
// pruning at the cycle's end (processes first, then deepest paths first), the
// causes a process no longer lists (pruned before it converges, so their removal
// restarts it), a process whose service a declared one takes over (stopped
// before the new one installs), room made for a resource whose path another
// kind's object holds, and the old path a moved resource leaves.
//
// Its rule, the same everywhere: only what a record says mesh-host wrote, and
// nobody changed since, is deleted; what it never wrote is released.
#pragma once

#include <string>
#include <vector>

#include "apply/context.hh"
#include "apply/cycle/pending.hh"
#include "apply/cycle/records_in_hand.hh"
#include "apply/cycle/restart_ledger.hh"
#include "apply/cycle/settlement.hh"
#include "apply/outcome.hh"
#include "apply/step.hh"
#include "decl/model.hh"
#include "state/store.hh"

namespace mesh::apply::cycle {

class Pruner {
 public:
  Pruner(Context& ctx, state::Store* store, RecordsInHand& records, DeclaredIndex& declared,
         RestartLedger& ledger, Settlement& settlement)
      : ctx_(ctx),
        store_(store),
        records_(records),
        declared_(declared),
        ledger_(ledger),
        settlement_(settlement) {}

  // Every record no declared resource matched, in pruning's order.
  void prune();
  void forgetOriginalsNoLongerNeeded();
  // Before a process converges, the resources it restarted (reloaded) on that are
  // no longer declared go.
  void pruneFormerCauses(const std::vector<FormerCause>& causes);
  // Processes no longer declared whose service a declared process runs now;
  // whether any went.
  bool removeServicesTakenOver();
  // Another kind's object is in the way of `r`: removed, under `r`'s step, when a
  // record says mesh-host wrote it and nobody changed it since. The reason for `r`
  // (what it replaced); "" when nothing may go.
  std::string makeRoom(const decl::Resource& r, Step& step);
  // `r` now lives at its new path (its outcome there is `now`); what mesh-host
  // wrote at the old one goes, under `r`'s step. The outcome, saying so.
  Outcome leaveOldPath(const decl::Resource& r, const state::Record& old, const Outcome& now,
                       Step& step);

 private:
  void pruneOne(const state::Record& rec);
  Removal removeRecorded(const state::Record& rec, Step& step);

  Context& ctx_;
  state::Store* store_;
  RecordsInHand& records_;
  DeclaredIndex& declared_;
  RestartLedger& ledger_;
  Settlement& settlement_;
};

}  // namespace mesh::apply::cycle
