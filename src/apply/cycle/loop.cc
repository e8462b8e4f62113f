// The loop of one cycle: begin it, converge every declared resource in apply
// order, commit the staged writes, prune what is no longer declared, give service
// users their bundles, start what was installed, finish. Its collaborators are
// named: the RestartLedger (restarts owed and paid), the Settlement (how an
// outcome becomes final, the staged commit), the Pruner (what goes) and the
// Activator (starts, restarts, the settle rule); each resource's applier is
// handed a Step (apply/step.hh).
#include <optional>
#include <unordered_set>

#include "apply/applier.hh"
#include "apply/cycle.hh"
#include "apply/cycle/activator.hh"
#include "apply/cycle/pending.hh"
#include "apply/cycle/pruner.hh"
#include "apply/cycle/records_in_hand.hh"
#include "apply/cycle/restart_ledger.hh"
#include "apply/cycle/settlement.hh"
#include "apply/originals.hh"
#include "apply/step.hh"
#include "util/clock.hh"
#include "util/error.hh"
#include "util/fd.hh"

namespace mesh::apply {

namespace cycle {
namespace {

class Cycle {
 public:
  Cycle(Context& ctx, const decl::Declaration& d, state::Store* store, KeepOutcomes keep,
        OutcomeSink sink)
      : ctx_(ctx),
        decl_(d),
        store_(store),
        declared_(d),
        ledger_(ctx, d, store, records_, declared_, report_.cycle),
        settlement_(ctx, store, report_, keep, std::move(sink), ledger_, failures_),
        pruner_(ctx, store, records_, declared_, ledger_, settlement_),
        activator_(ctx, store, settlement_) {}

  CycleReport run(const std::string& text) {
    const int64_t started = unixNowMs();
    ctx_.forgetDirs();
    Finally forgetCheck([this] { ctx_.setBeforeAnyChange(nullptr); });  // it names this cycle
    load();
    if (ctx_.applying()) begin(text, started);
    prepareProcesses();
    pruner_.removeServicesTakenOver();
    // Writes staged and not committed when the cycle ends early (an error, a
    // crash point under test) are dropped: their temp files go, nothing moves.
    Finally dropStaged([this] { ctx_.dropWritesFrom(0); });
    settlement_.reserve(decl_.resources.size());
    // Its files looked at ahead, on another core, until its first act.
    ctx_.lookAhead(decl_.resources);
    Finally endLookAhead([this] { ctx_.stopLookingAhead(); });
    size_t done = 0;
    for (const auto& r : decl_.resources) {
      if (ctx_.stopRequested()) break;
      converge(r);
      if (ctx_.progress) ctx_.progress(++done, decl_.resources.size());
    }
    settlement_.commitStaged();
    report_.interrupted = ctx_.stopRequested();
    // An interrupted cycle prunes nothing (it has not seen everything) but still
    // starts what it installed: restarts it owes stay recorded either way.
    if (!report_.interrupted) pruner_.prune();
    activator_.keepAccess(decl_, report_);
    activator_.activate();
    if (usesSupervisor_) {
      if (ctx_.applying()) ctx_.supervisor().flush();
      report_.supervisor = ctx_.supervisor().name();
    }
    report_.supervisorCalls = ctx_.supervisorCalls();
    report_.ms = unixNowMs() - started;
    if (ctx_.applying()) finish(started);
    return std::move(report_);
  }

 private:
  // The records and the restarts owed; what a plan may not show.
  void load() {
    if (store_) {
      records_.all() = store_->loadRecordSet(decl_.resources.size());
      ledger_.load();
      // A cycle that did not finish may have been killed mid-write: this one
      // sweeps every path it visits of the temp files and trees left behind.
      if (ctx_.applying()) {
        const auto last = store_->lastCycle();
        ctx_.setSweepLeftovers(last && last->finishedAt == 0);
      }
    }
    if (ctx_.planning()) {
      std::unordered_set<std::string> secret;
      const auto& records = records_.all();
      for (size_t i = 0; i < records.slots(); ++i)
        if (records_.kindAt(i) == decl::Kind::Credential && !records[i].path.empty())
          secret.emplace(records[i].path);
      ctx_.setSecretPaths(std::move(secret));
    }
  }

  // The generation and the cycle's row, in one commit; the store's check before
  // the cycle's first change.
  void begin(const std::string& text, int64_t started) {
    state::Store::Txn txn(*store_);
    generation_ = store_->recordGeneration(decl_.digest.str(), text, started, decl_.source,
                                           decl_.baseDir, decl_.serial);
    report_.cycle = store_->beginCycle(started, generation_, ctx_.settings().node);
    ctx_.setCycle(report_.cycle);
    txn.commit();
    ctx_.setBeforeAnyChange([this] { store_->checkIntegrity(); });
  }

  void prepareProcesses() {
    ledger_.prepare();
    bool prunesProcess = false;
    const auto& records = records_.all();
    for (size_t i = 0; i < records.slots(); ++i)
      prunesProcess |=
          records_.kindAt(i) == decl::Kind::Process || records_.kindAt(i) == decl::Kind::Service;
    usesSupervisor_ = !ledger_.services().empty() || prunesProcess;
    // Owed restarts are checked against the service's start time, which some
    // backends only report in detail.
    if (usesSupervisor_) ctx_.expectServices(ledger_.services(), ledger_.anyOwed());
  }

  void converge(const decl::Resource& r) {
    if (r.service())
      if (const auto* former = ledger_.formerCausesOf(r.id)) pruner_.pruneFormerCauses(*former);
    const std::string kind = decl::kindName(r.kind);
    if (settlement_.needsStaged(r)) settlement_.commitStaged();
    // Only files and credentials stage their writes; any other act is made at
    // once, maybe in a directory made for a staged write: durable first.
    if (r.kind != decl::Kind::File && r.kind != decl::Kind::Credential) ctx_.syncMadeDirs();
    settlement_.beginResource();  // what `r` stages lies past it
    const state::Record* rec = records_.recordOf(r.id, r.kind);
    if (rec) ++records_.declaredRecords;
    // The same resource recorded under another path: it moved.
    const state::Record* movedFrom =
        rec && !rec->path.empty() && rec->path != r.path() ? rec : nullptr;
    Digest want;
    std::optional<Outcome> outcome;
    const state::Record* claimed = nullptr;  // the record claimInstall wrote, if it did
    if (auto dep = failures_.failedDependency(r); !dep.empty()) {
      outcome = Outcome::skipped(
          rec, fmt::format("requires {}, which {}", dep,
                           failures_.skipped.count(dep) ? "was skipped" : "failed"));
    } else {
      try {
        const Applier& applier = applierFor(r.kind);
        want = applier.want(ctx_, r);
        Step step(ctx_, r.service() ? ledger_.causesFor(r, want) : RestartCauses{});
        ledger_.oweBeforeChange(step, r.id, want.str());
        if (ctx_.applying() && r.service())
          step.setOweOwnRestart([this](const std::string& process, const Digest& intent) {
            store_->oweRestartsDurably(
                {{process, process, report_.cycle, unixNowMs(), intent.str()}});
          });
        // Processes, services and accounts claim what they are about to make.
        if (ctx_.applying())
          step.setClaimInstall(
              [&](const std::string& observed) { claimed = claim(r, kind, want, rec, observed); });
        const state::Record* hint = movedFrom ? nullptr : rec;
        std::string roomMade;
        try {
          outcome = Outcome::of(applier.reconcile(step, r, want, hint), want, hint);
        } catch (const InTheWay&) {
          roomMade = pruner_.makeRoom(r, step);
          if (roomMade.empty()) throw;
          outcome = Outcome::of(applier.reconcile(step, r, want, hint), want, hint);
        }
        if (!roomMade.empty() && !outcome->notConverged())
          outcome = outcome->replacing(roomMade, outcome->detail());
        if (movedFrom && !outcome->notConverged())
          outcome = pruner_.leaveOldPath(r, *movedFrom, *outcome, step);
        // Its on-remove, for when it leaves the declaration (apply/originals.hh).
        if (ctx_.applying() && !outcome->notConverged()) ctx_.originals().noteOnRemove(r);
      } catch (const Error& e) {
        outcome = Outcome::failed(rec, e.what());
      }
    }
    // What the store holds now: the outcome is recorded over the claim, keeping it.
    if (claimed) rec = claimed;
    // A resource that failed after staging a write leaves the old file.
    if (outcome->notConverged()) settlement_.dropResourceWrites();
    const size_t staged = settlement_.stagedByResource();
    if (outcome->verdict() == Verdict::Skipped) failures_.skipped.insert(r.id);
    if (outcome->notConverged())
      failures_.failed.insert(r.id);
    else
      ledger_.holds(r.id, outcome->held());
    if (outcome->changed() && outcome->restartsDependents) ledger_.changed(r.id);
    Pending p{r.id, r.module(), decl::kindName(r.kind), r.path(),
              want, rec,        settlement_.nextIndex()};
    if (outcome->activation != Activation::None) {
      p.rec = records_.keep(p.rec);
      activator_.await(std::move(p), {r.id, std::string(r.module()), kind, std::move(*outcome),
                                      std::string(r.path())});
    } else if (staged > 0) {
      p.rec = records_.keep(p.rec);
      settlement_.awaitStaged(
          std::move(p), staged,
          {r.id, std::string(r.module()), kind, std::move(*outcome), std::string(r.path())});
    } else {
      settlement_.record(p, *outcome);  // final now: kept only if the report keeps it
      if (settlement_.keeps(*outcome))
        settlement_.emit(
            {r.id, std::string(r.module()), kind, std::move(*outcome), std::string(r.path())});
    }
    if (ctx_.writesFull()) settlement_.commitStaged();
  }

  // Step::claimInstall for `r`: its record (made from `rec`, or new) with the
  // kind's `observed`, committed before the kind installs anything.
  const state::Record* claim(const decl::Resource& r, const std::string& kind, const Digest& want,
                             const state::Record* rec, const std::string& observed) {
    state::Record c = rec ? *rec : state::Record{};
    c.id = r.id;
    c.module = r.module();
    c.kind = kind;
    c.path = r.path();
    if (!rec) {
      c.want = want.str();
      c.outcome = verdictName(Verdict::Failed);
      c.reason = "cut short while installing";
    }
    c.observed = observed;
    // Committed, not synced: it survives mesh-host's crash or kill, which is what
    // leaves a unit behind; an fsync per new process cost 50 starts 1.7 s.
    state::Store::Txn txn(*store_);
    store_->putRecord(c);
    txn.commit();
    return records_.keep(std::move(c));
  }

  void finish(int64_t started) {
    ledger_.finish();
    state::Cycle c;
    c.cycle = report_.cycle;
    c.startedAt = started;
    // An interrupted cycle (the stop flag) did not see every resource: its row keeps
    // what it did, but it is no finished cycle — status, generations and the fleet
    // status never show it as one that applied the declaration.
    c.finishedAt = report_.interrupted ? 0 : unixNowMs();
    c.generation = generation_;
    c.tally = report_.tally;
    c.ms = report_.ms;
    store_->finishCycle(c);
    trimStore();
  }

  // The store kept within its bounds, under the state lock this cycle holds: a
  // bounded batch of old rows per cycle (state/store/retention.cc). A trim that
  // fails (a full disk) leaves the store as it was, and this cycle finished:
  // the next one tries again.
  void trimStore() {
    try {
      store_->trim(ctx_.settings().retention, unixNowMs());
    } catch (const Error&) {
    }
  }

  Context& ctx_;
  const decl::Declaration& decl_;
  state::Store* store_;
  CycleReport report_;
  RecordsInHand records_;
  DeclaredIndex declared_;
  Failures failures_;
  RestartLedger ledger_;
  Settlement settlement_;
  Pruner pruner_;
  Activator activator_;
  int64_t generation_ = 0;
  bool usesSupervisor_ = false;
};

}  // namespace
}  // namespace cycle

// A `service` resource needs a backend that drives units mesh-host did not install
// (systemd): otherwise the declaration is refused, at plan as at apply, before
// anything is recorded or changed.
void refuseUndrivenServices(Context& ctx, const decl::Declaration& d) {
  for (const auto& r : d.resources)
    if (r.kind == decl::Kind::Service && !ctx.supervisor().drivesForeignUnits())
      throw InputError(
          "{}: service {} ({}) needs --supervisor systemd: the {} supervisor runs "
          "only the processes mesh-host installs",
          r.pos.str(), r.id, *r.service(), ctx.supervisor().name());
}

CycleReport runCycle(Context& ctx, const decl::Declaration& d, const std::string& text,
                     state::Store* store, KeepOutcomes keep, OutcomeSink sink) {
  if (ctx.applying() && !store) throw Error("apply needs a state store");
  refuseUndrivenServices(ctx, d);
  if (!ctx.applying()) return cycle::Cycle(ctx, d, store, keep, std::move(sink)).run(text);
  try {
    return cycle::Cycle(ctx, d, store, keep, std::move(sink)).run(text);
  } catch (const std::exception& e) {
    // A cycle that could not finish (its store cannot be written: a full disk,
    // I/O errors) leaves its row unfinished; this says why, for `status`, until
    // a cycle finishes. Written in place, so a full state directory holds it too.
    state::noteCycleError(store->stateDir(), e.what());
    throw;
  }
}

}  // namespace mesh::apply
