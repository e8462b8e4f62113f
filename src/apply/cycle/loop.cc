#include "apply/cycle.hh"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "apply/applier.hh"
#include "apply/bundle_access.hh"
#include "apply/process_info.hh"
#include "state/records.hh"
#include "util/beneath.hh"
#include "util/error.hh"
#include "util/faults.hh"
#include "util/fd.hh"

namespace mesh::apply {

int64_t nowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

namespace {

// The record after this outcome; the store is written only when it differs.
state::Record nextRecord(const state::Record* rec, std::string_view id, std::string_view module,
                         std::string_view kind, std::string_view path, const Digest& want,
                         const Outcome& o, int64_t cycle, int64_t now) {
  state::Record r = rec ? *rec : state::Record{};
  r.id = id;
  r.module = module;
  r.kind = kind;
  r.path = path;
  if (!want.empty()) r.want = want.str();
  r.outcome = verdictName(o.verdict());
  r.reason = o.reason();
  r.detail = o.detail();
  if (!o.notConverged()) {
    r.wrote = o.held().str();
    if (!o.observedAsRecorded) r.observed = o.observed;  // else `rec`'s, copied above
  } else if (!o.observed.empty()) {
    r.observed = o.observed;  // what a failed start left installed (a process's unit)
  }
  if (o.changed()) {
    r.changedAt = now;
    r.changedCycle = cycle;
    r.changes += 1;
  }
  return r;
}

// One resource on its way through the cycle. Its names are views: of the
// declaration's resource, of a kept record (pruning) or of a kind's static name,
// all of which outlive the cycle's use of it (no copies per resource).
struct Pending {
  std::string_view id, module, kind, path;
  Digest want;
  const state::Record* rec;
  size_t resultIndex;
};

class Cycle {
 public:
  Cycle(Context& ctx, const decl::Declaration& d, state::Store* store, KeepOutcomes keep,
        OutcomeSink sink)
      : ctx_(ctx), decl_(d), store_(store), keep_(keep), sink_(std::move(sink)) {}

  CycleReport run(const std::string& text) {
    const int64_t started = nowMs();
    ctx_.forgetDirs();
    Finally forgetCheck([this] { ctx_.setBeforeAnyChange(nullptr); });  // it names this cycle
    if (store_) {
      records_ = store_->loadRecordSet(decl_.resources.size());
      for (auto& o : store_->owedRestarts()) owed_[o.process].push_back(o);
      // A cycle that did not finish may have been killed mid-write: this one
      // sweeps every path it visits of the temp files and trees left behind.
      if (ctx_.applying()) {
        const auto last = store_->lastCycle();
        ctx_.setSweepLeftovers(last && last->finishedAt == 0);
      }
    }
    if (ctx_.planning()) {
      std::unordered_set<std::string> secret;
      for (size_t i = 0; i < records_.slots(); ++i)
        if (const auto& rec = records_[i]; rec.kind == "credential" && !rec.path.empty())
          secret.emplace(rec.path);
      ctx_.setSecretPaths(std::move(secret));
    }
    if (ctx_.applying()) {
      state::Store::Txn txn(*store_);  // one commit for the generation and the cycle
      generation_ = store_->recordGeneration(decl_.digest.str(), text, started, decl_.source,
                                             decl_.baseDir, decl_.serial);
      report_.cycle = store_->beginCycle(started, generation_, ctx_.settings().node);
      ctx_.setCycle(report_.cycle);
      txn.commit();
      ctx_.setBeforeAnyChange([this] { store_->checkIntegrity(); });
    }
    prepareProcesses();
    removeServicesTakenOver();
    // Writes staged and not committed when the cycle ends early (an error, a
    // crash point under test) are dropped: their temp files go, nothing moves.
    Finally dropStaged([this] { ctx_.dropWritesFrom(0); });
    // Every outcome kept: room for them at once (growing would hold two copies).
    if (keep_ == KeepOutcomes::All && !sink_) report_.results.reserve(decl_.resources.size());
    size_t done = 0;
    for (const auto& r : decl_.resources) {
      if (ctx_.stopRequested()) break;
      converge(r);
      if (ctx_.progress) ctx_.progress(++done, decl_.resources.size());
    }
    commitStaged();
    report_.interrupted = ctx_.stopRequested();
    // An interrupted cycle prunes nothing (it has not seen everything) but still
    // starts what it installed: restarts it owes stay recorded either way.
    if (!report_.interrupted) prune();
    keepAccess();
    activate();
    if (usesSupervisor_) {
      if (ctx_.applying()) ctx_.supervisor().flush();
      report_.supervisor = ctx_.supervisor().name();
    }
    report_.supervisorCalls = ctx_.supervisorCalls();
    report_.ms = nowMs() - started;
    if (ctx_.applying()) finish(started);
    return std::move(report_);
  }

 private:
  // A resource a process restarted (reloaded) on, no longer listed.
  struct FormerCause {
    std::string cause;
    bool reload = false;
  };

  void prepareProcesses() {
    std::vector<std::string> services;
    for (const auto& r : decl_.resources) {
      for (const auto& cause : r.restartOn) dependents_[cause].push_back({r.id, false});
      for (const auto& cause : r.reloadOn) dependents_[cause].push_back({r.id, true});
      if (r.kind == decl::Kind::Process) {
        services.push_back(std::get<decl::ProcessSpec>(r.spec).service);
        serviceOf_[r.id] = services.back();
      }
    }
    bool prunesProcess = false;
    for (size_t i = 0; i < records_.slots(); ++i) prunesProcess |= records_.kind(i) == "process";
    usesSupervisor_ = !services.empty() || prunesProcess;
    findFormerCauses();
    // Owed restarts are checked against the service's start time, which some
    // backends only report in detail.
    if (usesSupervisor_) ctx_.expectServices(services, !owed_.empty());
    services_ = std::move(services);
  }

  // A process no longer declared whose service a declared process of another id
  // runs now (both took the default `<module>.service`): stopped and removed
  // first, before the new one installs its unit — stop, then install, in one
  // cycle. Pruning at the end would remove the unit just installed.
  void removeServicesTakenOver() {
    if (serviceOf_.empty()) return;
    std::unordered_map<std::string, std::string> declaredService;  // service → process id
    for (const auto& [id, service] : serviceOf_) declaredService.emplace(service, id);
    bool removed = false;
    for (size_t i = 0; i < records_.slots(); ++i) {
      if (records_.erased(i) || records_.kind(i) != "process") continue;
      const state::RecordView v = records_[i];
      if (serviceOf_.count(std::string(v.id))) continue;  // still declared
      const state::Record* rec = keep(v);
      const auto info = processInfo(*rec);
      if (!info || !declaredService.count(info->service)) continue;
      indexDeclaration();
      pruneOne(*rec);
      records_.erase(i);
      removed = true;
    }
    // What the declared one finds is what is left: observed anew.
    if (removed) ctx_.expectServices(services_, !owed_.empty());
  }

  // What the processes restarted (reloaded) on last cycle and no longer list, where
  // the cause is no longer declared and its record is still there: its removal
  // this cycle is a change of the process's input, like any other (docs/kinds.md).
  // The table keeps what processes list, for the next cycle to compare.
  void findFormerCauses() {
    if (!store_ || (serviceOf_.empty() && !prunesAnyProcess())) return;
    storedCauses_ = store_->processCauses();
    std::unordered_map<std::string, const decl::Resource*> processes;
    for (const auto& r : decl_.resources)
      if (r.kind == decl::Kind::Process) processes.emplace(r.id, &r);
    for (const auto& c : storedCauses_) {
      auto p = processes.find(c.process);
      if (p == processes.end()) continue;
      const auto& r = *p->second;
      auto lists = [&c](const std::vector<std::string>& ids) {
        return std::find(ids.begin(), ids.end(), c.cause) != ids.end();
      };
      if (lists(r.restartOn) || lists(r.reloadOn)) continue;
      indexDeclaration();  // only when a list lost an id: rare
      if (declaredIds_.count(c.cause) || !records_.find(c.cause)) continue;
      former_[c.process].push_back({c.cause, c.reload});
      dependents_[c.cause].push_back({c.process, c.reload});
    }
    if (ctx_.applying()) writeProcessCauses();
  }

  bool prunesAnyProcess() const {
    for (size_t i = 0; i < records_.slots(); ++i)
      if (!records_.erased(i) && records_.kind(i) == "process") return true;
    return false;
  }

  // The table as it must be now: what every declared process lists, and its former
  // causes whose records are still there (their removal is yet to be done: a crash
  // or a failed removal leaves them for a later cycle). Written only when it differs.
  void writeProcessCauses() {
    std::vector<state::ProcessCause> now;
    for (const auto& r : decl_.resources) {
      for (const auto& c : r.restartOn) now.push_back({r.id, c, false});
      for (const auto& c : r.reloadOn) now.push_back({r.id, c, true});
    }
    for (const auto& [process, causes] : former_)
      for (const auto& f : causes)
        if (records_.find(f.cause) || prunedKept_.count(f.cause))
          now.push_back({process, f.cause, f.reload});
    auto order = [](const state::ProcessCause& a, const state::ProcessCause& b) {
      return std::tie(a.process, a.cause) < std::tie(b.process, b.cause);
    };
    std::sort(now.begin(), now.end(), order);
    if (now == storedCauses_) return;
    store_->setProcessCauses(now);
    storedCauses_ = std::move(now);
  }

  bool isFormerCause(const std::string& process, const std::string& cause) const {
    auto f = former_.find(process);
    if (f == former_.end()) return false;
    for (const auto& c : f->second)
      if (c.cause == cause) return true;
    return false;
  }

  // The record of the resource in hand, in scratch_ (valid until the next
  // call; keep() it to hold it longer). nullptr when there is none.
  const state::Record* recordOf(const std::string& id, const std::string& kind) {
    auto i = records_.find(id);
    // A record of another kind under the same id describes something else.
    if (!i || records_.kind(*i) != kind) return nullptr;
    records_[*i].copyTo(scratch_);
    return &scratch_;
  }

  // A record that outlives the resource in hand (its outcome is recorded later).
  const state::Record* keep(const state::Record* rec) {
    if (rec != &scratch_) return rec;
    return &kept_.emplace_back(scratch_);
  }
  const state::Record* keep(const state::RecordView& v) { return &kept_.emplace_back(v.record()); }

  std::string failedDependency(const decl::Resource& r) const {
    for (const auto* deps : {&r.requires_, &r.restartOn, &r.reloadOn})
      for (const auto& dep : *deps)
        if (failed_.count(dep)) return dep;
    return {};
  }

  // Restarts owed from earlier cycles that the service has not paid yet (it has
  // not started since they were recorded). An intent is paid only when its
  // change happened: the cause holds, this cycle, what it was about to hold (or
  // changed again); an intent whose change never happened is cancelled.
  RestartCauses causesFor(const decl::Resource& r, const Digest& want) {
    RestartCauses c;
    for (const auto& cause : r.restartOn)
      if (changed_.count(cause)) c.changed.push_back(cause);
    for (const auto& cause : r.reloadOn)
      if (changed_.count(cause)) c.reloadChanged.push_back(cause);
    if (auto f = former_.find(r.id); f != former_.end())
      for (const auto& [cause, reload] : f->second)
        if (changed_.count(cause))
          (reload ? c.reloadChanged : c.changed).push_back(cause + " (removed)");
    auto it = owed_.find(r.id);
    if (it != owed_.end()) {
      const auto& svc = ctx_.service(std::get<decl::ProcessSpec>(r.spec).service);
      bool unpaid = false;
      for (const auto& o : it->second) {
        if (svc.active && svc.sinceUs / 1000 > o.at) continue;  // started since: paid
        switch (o.intent.empty() ? IntentFate::Happened : intentFate(r, want, o)) {
          case IntentFate::Happened:
            (o.reload ? c.owedReload : c.owed).emplace_back(o.cause, o.cycle);
            break;
          case IntentFate::Unknown:  // the cause failed: decided in a later cycle
            unpaid = true;
            break;
          case IntentFate::NeverHappened:
            if (ctx_.applying()) store_->cancelOwedRestart(r.id, o.cause);
            break;
        }
      }
      // Only what was owed when the cycle began: a cause converged before this
      // process may have recorded a restart since, which its restart pays.
      if (c.owed.empty() && c.owedReload.empty() && !unpaid && ctx_.applying())
        store_->clearOwedRestarts(r.id, report_.cycle);
    }
    return c;
  }

  enum class IntentFate { Happened, NeverHappened, Unknown };
  IntentFate intentFate(const decl::Resource& r, const Digest& want,
                        const state::OwedRestart& o) const {
    // Its own unit or bundle: if the process still wants what the intent named,
    // the change may have been made (the cycle then finds it in place, or makes
    // it and restarts anyway); wanting something else now, drift decides.
    if (o.cause == r.id && !o.reload)
      return o.intent == want.str() ? IntentFate::Happened : IntentFate::NeverHappened;
    // A cause the process no longer restarts (reloads) on owes it nothing more (a
    // confirmed row is still paid: its change is known to have happened).
    // A former cause (no longer declared, removed this cycle or before) owes
    // it what its removal owes.
    const auto& on = o.reload ? r.reloadOn : r.restartOn;
    if (std::find(on.begin(), on.end(), o.cause) == on.end() && !isFormerCause(r.id, o.cause))
      return IntentFate::NeverHappened;
    if (changed_.count(o.cause)) return IntentFate::Happened;
    auto held = heldNow_.find(o.cause);
    if (held == heldNow_.end()) return IntentFate::Unknown;
    return held->second == o.intent ? IntentFate::Happened : IntentFate::NeverHappened;
  }

  // Before the first change of a resource that processes restart on, the
  // restarts it will owe are written as intents and synced.
  void oweBeforeChange(Step& step, const std::string& id, std::string intent) {
    if (!ctx_.applying()) return;
    auto owes = dependents_.find(id);
    if (owes == dependents_.end()) return;
    step.setBeforeFirstChange([this, id, intent, processes = &owes->second] {
      std::vector<state::OwedRestart> intents;
      const int64_t now = nowMs();
      for (const auto& [process, reload] : *processes) {
        // A confirmed row this intent may not replace, yet paid already: it goes
        // first, or its older time would have a start before this change pay
        // for it too.
        if (auto paid = paidAtStart(process, id)) store_->settleOwedRestart(process, id, *paid);
        intents.push_back({process, id, report_.cycle, now, intent, reload});
      }
      store_->oweRestartsDurably(intents);
    });
  }

  // Whether `r` must see the staged writes in place first: it requires or
  // restarts on one of them (and, to fail or restart, needs its outcome).
  bool needsStaged(const decl::Resource& r) const {
    if (awaitingIds_.empty()) return false;
    for (const auto* deps : {&r.requires_, &r.restartOn, &r.reloadOn})
      for (const auto& dep : *deps)
        if (awaitingIds_.count(dep)) return true;
    return false;
  }

  // Moves the staged writes into place (util/write_batch.hh) and records their
  // outcomes — only now: a record never claims a file that is not yet durable.
  // A write that did not make it fails its resource, leaving the old file.
  void commitStaged() {
    if (awaiting_.empty()) return;
    auto done = ctx_.commitWrites();
    // One transaction for the batch's records (one each would cost a commit,
    // and WAL pages, per file); a record that must be synced gets its own.
    std::optional<state::Store::Txn> shared;
    size_t i = 0;
    for (const auto& [p, writes] : awaiting_) {
      Outcome& o = result(p.resultIndex).outcome;
      std::optional<std::string> error;
      for (size_t k = 0; k < writes; ++k, ++i) {
        if (done[i].error && !error) error = std::move(done[i].error);
        if (!done[i].observed.empty()) {
          o.observed = std::move(done[i].observed);
          o.observedAsRecorded = false;
        }
      }
      if (error) {
        o = Outcome::failed(p.rec, *error);
        const std::string id(p.id);
        failed_.insert(id);
        changed_.erase(id);
        heldNow_.erase(id);
      }
      record(p, o, &shared);
      settle(p.resultIndex);
    }
    if (shared) shared->commit();
    awaiting_.clear();
    awaitingIds_.clear();
    stagedMark_ = 0;
  }

  void converge(const decl::Resource& r) {
    if (!former_.empty() && r.kind == decl::Kind::Process)
      if (auto f = former_.find(r.id); f != former_.end()) pruneFormerCauses(f->second);
    const std::string kind = decl::kindName(r.kind);
    if (needsStaged(r)) commitStaged();
    // Only files and credentials stage their writes; any other act is made at
    // once, maybe in a directory made for a staged write: durable first.
    if (r.kind != decl::Kind::File && r.kind != decl::Kind::Credential) ctx_.syncMadeDirs();
    stagedMark_ = ctx_.stagedWrites();  // what `r` stages lies past it
    const state::Record* rec = recordOf(r.id, kind);
    if (rec) ++declaredRecords_;
    // The same resource recorded under another path: it moved.
    const state::Record* movedFrom =
        rec && !rec->path.empty() && rec->path != r.path() ? rec : nullptr;
    Digest want;
    std::optional<Outcome> outcome;
    const state::Record* claimed = nullptr;  // the record claimInstall wrote, if it did
    if (auto dep = failedDependency(r); !dep.empty()) {
      outcome = Outcome::skipped(rec, fmt::format("requires {}, which {}", dep,
                                                  skipped_.count(dep) ? "was skipped" : "failed"));
    } else {
      try {
        const Applier& applier = applierFor(r.kind);
        want = applier.want(ctx_, r);
        Step step(ctx_, r.kind == decl::Kind::Process ? causesFor(r, want) : RestartCauses{});
        oweBeforeChange(step, r.id, want.str());
        if (ctx_.applying() && r.kind == decl::Kind::Process) {
          step.setOweOwnRestart([this](const std::string& process, const Digest& intent) {
            store_->oweRestartsDurably({{process, process, report_.cycle, nowMs(), intent.str()}});
          });
          step.setClaimInstall([&](const std::string& observed) {
            claimed = claim(r, kind, want, rec, observed);
          });
        }
        const state::Record* hint = movedFrom ? nullptr : rec;
        std::string roomMade;
        try {
          outcome = Outcome::of(applier.reconcile(step, r, want, hint), want, hint);
        } catch (const InTheWay&) {
          roomMade = makeRoom(r, kind, step);
          if (roomMade.empty()) throw;
          outcome = Outcome::of(applier.reconcile(step, r, want, hint), want, hint);
        }
        if (!roomMade.empty() && !outcome->notConverged())
          outcome = outcome->replacing(roomMade, outcome->detail());
        if (movedFrom && !outcome->notConverged())
          outcome = leaveOldPath(r, *movedFrom, *outcome, step);
      } catch (const Error& e) {
        outcome = Outcome::failed(rec, e.what());
      }
    }
    // What the store holds now: the outcome is recorded over the claim, keeping it.
    if (claimed) rec = claimed;
    // A resource that failed after staging a write leaves the old file.
    if (outcome->notConverged()) ctx_.dropWritesFrom(stagedMark_);
    const size_t staged = ctx_.stagedWrites() - stagedMark_;
    if (outcome->verdict() == Verdict::Skipped) skipped_.insert(r.id);
    if (outcome->notConverged())
      failed_.insert(r.id);
    else if (dependents_.count(r.id))  // only causes: intents are judged against them
      heldNow_[r.id] = outcome->held().str();
    if (outcome->changed() && outcome->restartsDependents) changed_.insert(r.id);
    Pending p{r.id, r.module(), decl::kindName(r.kind),        r.path(),
              want, rec,        base_ + report_.results.size()};
    if (outcome->activation != Activation::None) {
      hold({r.id, std::string(r.module()), kind, std::move(*outcome)});
      p.rec = keep(p.rec);
      activations_.push_back(std::move(p));  // recorded once started, in activate()
    } else if (staged > 0) {
      hold({r.id, std::string(r.module()), kind, std::move(*outcome)});
      p.rec = keep(p.rec);
      awaitingIds_.insert(r.id);
      awaiting_.emplace_back(std::move(p), staged);  // recorded once in place
    } else {
      record(p, *outcome);  // final now: kept only if the report keeps it
      if (keeps(*outcome)) emit({r.id, std::string(r.module()), kind, std::move(*outcome)});
    }
    if (ctx_.writesFull()) commitStaged();
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
    return &kept_.emplace_back(std::move(c));
  }

  // Paths and ids of the declaration, built on first need (a move, a kind change).
  void indexDeclaration() {
    if (indexed_) return;
    indexed_ = true;
    for (const auto& r : decl_.resources) {
      declaredIds_.insert(r.id);
      if (!r.path().empty()) declaredPaths_.emplace(r.path(), r.id);
    }
  }

  // Another kind's object is in the way of `r`. When a record says mesh-host
  // wrote it there (under another id, or this id as another kind) and nobody
  // changed it since, it goes — the same rule as pruning — and the reason for
  // `r` says what it replaced. "" when nothing may go.
  // A removal that deleted what was there (a plan: would delete it).
  static bool deletedIt(const Removal& removal) {
    return removal.detail() == "deleted" || removal.detail() == "would delete";
  }

  std::string makeRoom(const decl::Resource& r, const std::string& kind, Step& step) {
    commitStaged();  // what it erases from records_ may be a staged write's record
    indexDeclaration();
    std::optional<size_t> oldAt;
    for (size_t i = 0; i < records_.slots(); ++i)
      if (const auto& rec = records_[i]; !records_.erased(i) && rec.path == r.path() &&
                                         rec.kind != kind && rec.changes > 0 && !rec.wrote.empty())
        oldAt = i;
    if (!oldAt) return {};
    const state::Record* old = keep(records_[*oldAt]);
    const Removal removal = applierFor(old->kind).remove(step, *old);
    if (removal.verdict() != Verdict::Removed || !deletedIt(removal)) return {};
    const std::string reason = old->id == r.id
                                   ? fmt::format("kind changed: {} -> {}", old->kind, kind)
                                   : fmt::format("replaces the {} of {}", old->kind, old->id);
    const std::string oldId = old->id;
    if (ctx_.planning())
      ctx_.planRemoved(r.path());
    else if (!declaredIds_.count(oldId))
      store_->deleteRecord(oldId);
    records_.erase(*oldAt);  // its object is gone: nothing of it is left to prune
    return reason;
  }

  // `r` now lives at its new path; what mesh-host wrote at the old one goes,
  // unless someone changed it since or another resource declares it now.
  Outcome leaveOldPath(const decl::Resource& r, const state::Record& old, const Outcome& now,
                       Step& step) {
    indexDeclaration();
    std::string left;
    bool deleted = false;
    if (auto owner = declaredPaths_.find(old.path); owner != declaredPaths_.end()) {
      left = fmt::format("old path now managed by {}", owner->second);
    } else if (old.changes == 0 || old.wrote.empty()) {
      left = "old path left in place: mesh-host never wrote it";
    } else {
      try {
        const Removal removal = removeRecorded(old, step);
        deleted = deletedIt(removal);
        left = deleted ? (ctx_.planning() ? "old path would be deleted" : "old path deleted")
                       : "old path " + removal.detail();
      } catch (const Error& e) {
        left = fmt::format("old path left in place: {}", e.what());
      }
    }
    // Nothing changed at either path, and an intent says a cycle was making
    // this very change: that cycle made the move, and a crash took its record.
    // Nothing changes now, so nothing restarts on it now; whether the restart
    // it owed is paid, its intent says (causesFor). The record learns the path.
    if (now.verdict() == Verdict::Unchanged && !deleted && intendedBefore(r.id, now.held())) {
      Outcome done = now.retold(fmt::format("moved from {}", old.path));
      done.movedFrom = old.path;
      done.movedTo = r.path();
      return done;
    }
    const std::string detail = now.detail().empty() ? left : now.detail() + "; " + left;
    Outcome moved = now.replacing(fmt::format("moved from {}", old.path), detail);
    moved.movedFrom = old.path;
    moved.movedTo = r.path();
    return moved;
  }

  // The time of the restart owed to `process` for `cause` when the cycle began,
  // if the service has started since (paid); nullopt otherwise.
  std::optional<int64_t> paidAtStart(const std::string& process, const std::string& cause) {
    auto rows = owed_.find(process);
    auto spec = serviceOf_.find(process);
    if (rows == owed_.end() || spec == serviceOf_.end()) return std::nullopt;
    for (const auto& o : rows->second) {
      if (o.cause != cause) continue;
      const auto& svc = ctx_.service(spec->second);
      if (svc.active && svc.sinceUs / 1000 > o.at) return o.at;
    }
    return std::nullopt;
  }

  // What mesh-host wrote at `rec`'s path, removed by its kind (only when nobody
  // changed it since). A parent on the way that is no longer a directory: when a
  // file (or any non-directory) stands there, it cannot hold what was written, so
  // that is already gone; a link is never followed, so whatever lies behind it is
  // left in place, untouched. Either way the record goes.
  Removal removeRecorded(const state::Record& rec, Step& step) {
    try {
      return applierFor(rec.kind).remove(step, rec);
    } catch (const PathRefused& e) {
      if (e.found == PathRefused::Found::NotDirectory)
        return Removal::removed(
            fmt::format("already gone: {} is not a directory now", e.component));
      if (e.found == PathRefused::Found::Link)
        return Removal::released(
            fmt::format("left in place: {} is a symbolic link now, which mesh-host does not follow",
                        e.component));
      throw;
    }
  }

  // An earlier cycle wrote an intent for `cause` about to hold `held`.
  bool intendedBefore(const std::string& cause, const Digest& held) const {
    auto processes = dependents_.find(cause);
    if (processes == dependents_.end()) return false;
    for (const auto& [process, reload] : processes->second)
      if (auto rows = owed_.find(process); rows != owed_.end())
        for (const auto& o : rows->second)
          if (o.cause == cause && o.intent == held.str()) return true;
    return false;
  }

  // Processes first (stopped before what they use goes), then deepest paths
  // first, so a directory is emptied before it is removed.
  static void pruningOrder(std::vector<const state::Record*>& gone) {
    std::sort(gone.begin(), gone.end(), [](const auto* a, const auto* b) {
      const bool pa = a->kind == "process", pb = b->kind == "process";
      if (pa != pb) return pa;
      auto depth = [](const std::string& p) { return std::count(p.begin(), p.end(), '/'); };
      if (depth(a->path) != depth(b->path)) return depth(a->path) > depth(b->path);
      return a->id < b->id;
    });
  }

  void prune() {
    // Every record belongs to a declared resource (the usual cycle): nothing to prune.
    if (declaredRecords_ == records_.size()) return;
    indexDeclaration();
    std::vector<const state::Record*> gone;
    for (size_t i = 0; i < records_.slots(); ++i)
      if (!records_.erased(i) && !declaredIds_.count(std::string(records_[i].id)))
        gone.push_back(keep(records_[i]));
    pruningOrder(gone);
    for (const auto* rec : gone) pruneOne(*rec);
  }

  // Before a process converges, the resources it restarted (reloaded) on that are
  // no longer declared go — with whatever else no longer declared lies beneath
  // them, in pruning's order — so that their removal restarts (reloads) it, as
  // their change would (causesFor). One whose path another resource now declares
  // is left to the usual order (that resource may replace it first).
  void pruneFormerCauses(const std::vector<FormerCause>& causes) {
    indexDeclaration();
    std::vector<const state::Record*> gone;
    for (const auto& f : causes) {
      auto at = records_.find(f.cause);
      if (!at) continue;  // gone already (the cause of another process too)
      const std::string path(records_[*at].path);
      if (!path.empty() && declaredPaths_.count(path)) continue;
      for (size_t i = 0; i < records_.slots(); ++i) {
        if (records_.erased(i)) continue;
        const auto rec = records_[i];
        const bool beneath = !path.empty() && rec.path.size() > path.size() &&
                             rec.path.starts_with(path) && rec.path[path.size()] == '/';
        if (i != *at && (!beneath || declaredIds_.count(std::string(rec.id)) ||
                         declaredPaths_.count(std::string(rec.path))))
          continue;
        gone.push_back(keep(rec));
        records_.erase(i);
      }
    }
    pruningOrder(gone);
    for (const auto* rec : gone) pruneOne(*rec);
  }

  // Removes (or releases) what mesh-host wrote for a record no longer declared.
  // A process's former cause owes the process a restart (reload) when it is
  // deleted: the intent is synced before, as for any change.
  void pruneOne(const state::Record& rec) {
    // Installed by mesh-host though never recorded as created (a process whose
    // first start failed): removed like what it wrote.
    const bool installed = ownsInstalled(rec);
    if (rec.wrote.empty() && !installed) {  // never wrote anything: nothing to remove
      if (ctx_.applying()) store_->deleteRecord(rec.id);
      return;
    }
    std::optional<Outcome> outcome;
    if (rec.changes == 0 && !installed) {
      // Only ever adopted as found: mesh-host never wrote it, so never deletes it.
      outcome = Outcome::of(Removal::released("left in place: mesh-host never wrote it"));
    } else if (auto owner = declaredPaths_.find(rec.path);
               !rec.path.empty() && owner != declaredPaths_.end()) {
      outcome = Outcome::of(Removal::released(
          fmt::format("left in place: {} now manages {}", owner->second, rec.path)));
    } else {
      const bool owes = dependents_.count(rec.id) > 0;
      Step step(ctx_);
      if (owes) oweBeforeChange(step, rec.id, kRemovedIntent);
      try {
        outcome = Outcome::of(removeRecorded(rec, step));
      } catch (const Error& e) {
        outcome = Outcome::failed(&rec, e.what());
      }
      // Deleted now (or found gone: an intent then says whether this cycle's
      // predecessor deleted it, see intentFate).
      if (owes && outcome->verdict() == Verdict::Removed) heldNow_[rec.id] = kRemovedIntent;
    }
    if (deletedNow(*outcome)) changed_.insert(rec.id);
    if (!outcome->gone()) prunedKept_.insert(rec.id);
    Pending p{rec.id,
              rec.module,
              rec.kind,
              rec.path,
              Digest::none(),
              &rec,
              base_ + report_.results.size()};
    ResourceResult res{rec.id, rec.module, rec.kind, std::move(*outcome)};
    record(p, res.outcome);
    emit(std::move(res));
  }

  // A removal that deleted what mesh-host wrote (a plan: would delete it), not
  // one that found it gone already.
  static bool deletedNow(const Outcome& o) {
    return o.verdict() == Verdict::Removed &&
           (o.detail() == "deleted" || o.detail() == "would delete");
  }

  // The intent of a change that removes a cause: what it holds after (nothing).
  static constexpr const char* kRemovedIntent = "removed";

  static bool ownsInstalled(const state::Record& rec) {
    try {
      return applierFor(rec.kind).ownsInstalled(rec);
    } catch (const Error&) {
      return false;  // a kind this mesh-host does not know
    }
  }

  // Starts and restarts, last, in declaration order: by now every file they
  // read is in place, every unit is installed, and a backend that must reload
  // does so once, before the first of them. Then the settle rule
  // (Supervisor::settle): every service started or restarted must stay up for the
  // settle time — all of them settled together, in one window — or it failed.
  // A restart under a rolling-restart slot is settled before the slot is freed.
  void activate() {
    std::vector<size_t> settling;  // of activations_
    std::vector<std::string> names;
    for (size_t i = 0; i < activations_.size(); ++i) {
      const auto& p = activations_[i];
      Outcome& o = result(p.resultIndex).outcome;
      if (ctx_.applying() && o.verdict() != Verdict::Failed) {
        bool made = false;  // the start or restart was made
        try {
          store_->checkIntegrity();  // as before any change (a start is one)
          crashPoint(crash::kBeforeRestart);
          if (o.activation == Activation::Reload) {
            // In place: the service stays up, so no restart slot is taken.
            ctx_.supervisor().reloadService(o.service);
          } else if (o.activation == Activation::Restart && ctx_.holdRestartSlot) {
            // Freed when the restart is done and settled, or has thrown.
            RestartPermit permit = ctx_.holdRestartSlot(o.service);
            ctx_.supervisor().restart(o.service);
            made = true;
            auto failed = ctx_.supervisor().settle({o.service});
            if (auto f = failed.find(o.service); f != failed.end())
              throw Error("restart of {} failed: {}", o.service, f->second);
          } else {
            if (o.activation == Activation::Restart)
              ctx_.supervisor().restart(o.service);
            else
              ctx_.supervisor().start(o.service);
            made = true;
            settling.push_back(i);
            names.push_back(o.service);
          }
          crashPoint(crash::kAfterRestart);
          o.restarted = o.activation == Activation::Restart;
        } catch (const Error& e) {
          if (!settling.empty() && settling.back() == i) {
            settling.pop_back();
            names.pop_back();
          }
          failActivation(o, p, e.what(), made);
        }
        if (!settling.empty() && settling.back() == i) continue;  // recorded once settled
      }
      record(p, o);
      settle(p.resultIndex);
    }
    if (settling.empty()) return;
    std::map<std::string, std::string> failed;
    try {
      failed = ctx_.supervisor().settle(names);
    } catch (const Error& e) {
      for (const auto& n : names)
        failed[n] = fmt::format("cannot tell whether it stayed up: {}", e.what());
    }
    for (size_t i : settling) {
      const auto& p = activations_[i];
      Outcome& o = result(p.resultIndex).outcome;
      if (auto f = failed.find(o.service); f != failed.end())
        failActivation(o, p,
                       fmt::format("{} of {} failed: {}",
                                   o.activation == Activation::Restart ? "restart" : "start",
                                   o.service, f->second),
                       true);
      record(p, o);
      settle(p.resultIndex);
    }
  }

  // Service users' access to their bundles, after every resource (a `user`
  // resource has made its user) and before any start. When it cannot be given,
  // the services that would start as a user do not: they could not read their
  // bundle (those already running keep what they have).
  void keepAccess() {
    try {
      report_.access = keepBundleAccess(ctx_, decl_);
    } catch (const Error& e) {
      report_.accessError = fmt::format("cannot give service users their bundles: {}", e.what());
      std::unordered_set<std::string_view> asUsers;
      for (const auto& r : decl_.resources)
        if (r.kind == decl::Kind::Process && serviceUid(std::get<decl::ProcessSpec>(r.spec)))
          asUsers.insert(r.id);
      for (const auto& p : activations_)
        if (asUsers.count(p.id))
          failActivation(result(p.resultIndex).outcome, p, report_.accessError, false);
    }
  }

  // The start, restart or reload of `o` failed: it is `failed`, saying why, and
  // keeps what the kind said besides — the warning (unit keys the backend cannot
  // honour: often the very reason), what it installed (the record's observed), and,
  // when the start or restart was made (`made`: the service did not stay up),
  // that it was: the restarts it owed are paid.
  void failActivation(Outcome& o, const Pending& p, const std::string& why, bool made) {
    Outcome failed = Outcome::failed(p.rec, why);
    failed.service = o.service;
    failed.warning = std::move(o.warning);
    failed.observed = std::move(o.observed);
    failed.activated = made && o.activation != Activation::Reload;
    failed.restarted = made && o.activation == Activation::Restart;
    o = std::move(failed);
  }

  // Whether the report keeps an outcome recorded at once (the others always are).
  bool keeps(const Outcome& o) const {
    return sink_ || keep_ == KeepOutcomes::All || o.verdict() != Verdict::Unchanged ||
           !o.warning.empty();
  }

  // The outcome at `index` (Pending::resultIndex), not yet handed to the sink.
  ResourceResult& result(size_t index) { return report_.results[index - base_]; }

  // An outcome recorded later (a staged write, a start): held in the report, and
  // holding back those after it from the sink until settle().
  void hold(ResourceResult&& r) {
    report_.results.push_back(std::move(r));
    if (sink_) final_.push_back(false);
  }

  // An outcome final already: to the sink (after any held before it), or kept.
  void emit(ResourceResult&& r) {
    if (!sink_) {
      report_.results.push_back(std::move(r));
    } else if (report_.results.empty()) {
      sink_(std::move(r));
      ++base_;
    } else {
      report_.results.push_back(std::move(r));
      final_.push_back(true);
    }
  }

  // The held outcome at `index` is recorded: it and the final ones after it, up to
  // the next one held, go to the sink.
  void settle(size_t index) {
    if (!sink_) return;
    final_[index - base_] = true;
    size_t n = 0;
    while (n < final_.size() && final_[n]) ++n;
    if (n == 0) return;
    for (size_t i = 0; i < n; ++i) sink_(std::move(report_.results[i]));
    report_.results.erase(report_.results.begin(), report_.results.begin() + n);
    final_.erase(final_.begin(), final_.begin() + n);
    base_ += n;
  }

  // Counts `p`'s outcome and, applying, writes what it changes in the store.
  void record(const Pending& p, Outcome& outcome,
              std::optional<state::Store::Txn>* shared = nullptr) {
    count(report_.tally, outcome.verdict());
    // What the kind observed is for the record only (the report never shows
    // it): once recorded, its memory goes (~140 bytes a file, kept for every
    // resource until the report is printed otherwise).
    Finally release([&outcome] { std::string().swap(outcome.observed); });
    if (!ctx_.applying()) return;
    if (auto w = writeFor(p, outcome)) write(p, outcome, *w, w->now, shared);
  }

  // A process that restarts (or reloads) when a cause of it changes.
  struct Dependent {
    std::string process;
    bool reload = false;
  };

  // What the store must learn from one outcome.
  struct Write {
    std::optional<state::Record> next;  // nullopt: the record goes
    bool putRecord = false;             // `next` differs from the record
    const std::vector<Dependent>* owedBy =
        nullptr;                // processes the change owes a restart or reload
    bool paysRestarts = false;  // a start or restart was made
    bool history = false;       // anything but `unchanged`
    bool synced = false;        // committed with an fsync
    int64_t now = 0;            // the time it is written at
  };

  // Whether `p`'s outcome needs a write, and which; nullopt in the no-op path.
  std::optional<Write> writeFor(const Pending& p, const Outcome& outcome) const {
    Write w;
    // A removal owes its processes only when it deleted something: a cause found
    // gone already changes nothing now (an intent says whether it owes, causesFor).
    const bool changed = (outcome.changed() || deletedNow(outcome)) && outcome.restartsDependents;
    if (changed)  // a no-op cycle looks nothing up
      if (auto owes = dependents_.find(std::string(p.id)); owes != dependents_.end())
        w.owedBy = &owes->second;
    w.paysRestarts =
        (outcome.activation != Activation::None && outcome.verdict() != Verdict::Failed) ||
        outcome.activated;
    if (!w.owedBy && !w.paysRestarts && unchangedAsRecorded(p, outcome)) return std::nullopt;
    w.now = nowMs();  // not read in the no-op path
    if (!outcome.gone())
      w.next =
          nextRecord(p.rec, p.id, p.module, p.kind, p.path, p.want, outcome, report_.cycle, w.now);
    w.putRecord = w.next && (!p.rec || *w.next != *p.rec);
    w.history = outcome.verdict() != Verdict::Unchanged;
    // A change that owes restarts, and a move, is recorded synced (one fsync
    // per such change, none in a no-op cycle): the restarts may be made before
    // the next sync, and an OS crash that took back this commit but not the
    // change would leave a record that makes the change look new again (a move
    // is `updated` once more), restarting its processes (those that restart on
    // it by then) a second time.
    w.synced = w.owedBy || (outcome.changed() && !outcome.movedFrom.empty());
    return w;
  }

  // Writes `w` in one transaction — the record, the restarts it owes or pays, its
  // history — of its own, or in `*shared`, opened there when needed and committed
  // by the caller, when given and the write need not be synced.
  void write(const Pending& p, const Outcome& outcome, const Write& w, int64_t now,
             std::optional<state::Store::Txn>* shared) {
    if (w.owedBy) crashPoint(crash::kBeforeRecord);
    if (shared && *shared && w.synced) {  // transactions do not nest
      (*shared)->commit();
      shared->reset();
    }
    std::optional<state::Store::Txn> own;
    if (!shared || w.synced)
      own.emplace(*store_,
                  w.synced ? state::Store::Txn::Sync::Full : state::Store::Txn::Sync::Normal);
    else if (!*shared)
      shared->emplace(*store_);
    if (!w.next)
      store_->deleteRecord(std::string(p.id));
    else if (w.putRecord)
      store_->putRecord(*w.next);
    if (w.owedBy)
      for (const auto& [process, reload] : *w.owedBy)
        store_->oweRestart({process, std::string(p.id), report_.cycle, now, "", reload});
    // A reload pays the reloads owed, never a restart; a start or restart pays both.
    if (w.paysRestarts && outcome.activation == Activation::Reload)
      store_->clearOwedReloads(std::string(p.id));
    else if (w.paysRestarts)
      store_->clearOwedRestarts(std::string(p.id));
    if (w.history)
      store_->addHistory({report_.cycle, std::string(p.id), verdictName(outcome.verdict()),
                          outcome.reason(), p.want.str(), outcome.held().str(), now});
    if (own) own->commit();
    if (w.owedBy) crashPoint(crash::kAfterChangeRecorded);
  }

  // An unchanged outcome that the record already says, word for word: nothing to
  // write (compared in place: the no-op cycle copies no record).
  static bool unchangedAsRecorded(const Pending& p, const Outcome& o) {
    if (o.verdict() != Verdict::Unchanged || !p.rec) return false;
    const auto& r = *p.rec;
    return r.outcome == "unchanged" && r.reason == o.reason() && r.detail == o.detail() &&
           (o.observedAsRecorded || r.observed == o.observed) && o.held().is(r.wrote) &&
           p.want.is(r.want) && r.module == p.module && r.path == p.path;
  }

  void finish(int64_t started) {
    if (!former_.empty()) writeProcessCauses();  // the causes removed are no one's now
    state::Cycle c;
    c.cycle = report_.cycle;
    c.startedAt = started;
    // An interrupted cycle (the stop flag) did not see every resource: its row keeps
    // what it did, but it is no finished cycle — status, generations and the fleet
    // status never show it as one that applied the declaration.
    c.finishedAt = report_.interrupted ? 0 : nowMs();
    c.generation = generation_;
    c.tally = report_.tally;
    c.ms = report_.ms;
    store_->finishCycle(c);
  }

  Context& ctx_;
  const decl::Declaration& decl_;
  state::Store* store_;
  state::Records records_;
  state::Record scratch_;           // the record of the resource in hand (recordOf)
  std::deque<state::Record> kept_;  // records held past it (keep): addresses never move
  std::map<std::string, std::vector<state::OwedRestart>> owed_;
  // A process that restarts (reload false) or reloads on a cause.
  std::unordered_map<std::string, std::vector<Dependent>> dependents_;  // cause → processes
  // What processes listed at the newest cycle (process_causes), and each
  // declared process's former causes (no longer listed, no longer declared,
  // their record still there: removed this cycle).
  std::vector<state::ProcessCause> storedCauses_;
  std::unordered_map<std::string, std::vector<FormerCause>> former_;  // process → causes
  std::unordered_set<std::string> prunedKept_;              // pruned, and the record stays (failed)
  std::unordered_map<std::string, std::string> serviceOf_;  // process → service
  std::vector<std::string> services_;                       // the declared processes' services
  std::unordered_set<std::string> failed_, changed_;        // failed_: failed or skipped
  std::unordered_set<std::string> skipped_;
  std::unordered_map<std::string, std::string> heldNow_;  // id → digest held after this cycle
  std::vector<Pending> activations_;
  // Outcomes whose writes are staged (with how many), recorded by commitStaged().
  std::vector<std::pair<Pending, size_t>> awaiting_;
  std::unordered_set<std::string> awaitingIds_;
  size_t stagedMark_ = 0;       // staged writes before the resource in hand
  size_t declaredRecords_ = 0;  // records that matched a declared resource
  bool indexed_ = false;
  std::unordered_set<std::string> declaredIds_;
  std::unordered_map<std::string, std::string> declaredPaths_;  // path → id
  CycleReport report_;
  int64_t generation_ = 0;
  bool usesSupervisor_ = false;
  KeepOutcomes keep_;
  OutcomeSink sink_;
  // With a sink: outcomes handed to it so far (report_.results holds those after),
  // and which of the held ones are final.
  size_t base_ = 0;
  std::vector<bool> final_;
};

}  // namespace

CycleReport runCycle(Context& ctx, const decl::Declaration& d, const std::string& text,
                     state::Store* store, KeepOutcomes keep, OutcomeSink sink) {
  if (ctx.applying() && !store) throw Error("apply needs a state store");
  if (!ctx.applying()) return Cycle(ctx, d, store, keep, std::move(sink)).run(text);
  try {
    return Cycle(ctx, d, store, keep, std::move(sink)).run(text);
  } catch (const std::exception& e) {
    // A cycle that could not finish (its store cannot be written: a full disk,
    // I/O errors) leaves its row unfinished; this says why, for `status`, until
    // a cycle finishes. Written in place, so a full state directory holds it too.
    state::noteCycleError(store->stateDir(), e.what());
    throw;
  }
}

}  // namespace mesh::apply
