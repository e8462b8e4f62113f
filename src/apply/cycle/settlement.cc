#include "apply/cycle/settlement.hh"

#include "util/clock.hh"
#include "util/faults.hh"
#include "util/fd.hh"

namespace mesh::apply::cycle {

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

// An unchanged outcome that the record already says, word for word: nothing to
// write (compared in place: the no-op cycle copies no record).
bool unchangedAsRecorded(const Pending& p, const Outcome& o) {
  if (o.verdict() != Verdict::Unchanged || !p.rec) return false;
  const auto& r = *p.rec;
  return r.outcome == "unchanged" && r.reason == o.reason() && r.detail == o.detail() &&
         (o.observedAsRecorded || r.observed == o.observed) && o.held().is(r.wrote) &&
         p.want.is(r.want) && r.module == p.module && r.path == p.path;
}

}  // namespace

// What the store must learn from one outcome.
struct Settlement::Write {
  std::optional<state::Record> next;               // nullopt: the record goes
  bool putRecord = false;                          // `next` differs from the record
  const std::vector<Dependent>* owedBy = nullptr;  // processes the change owes a restart or reload
  bool paysRestarts = false;                       // a start or restart was made
  bool history = false;                            // anything but `unchanged`
  bool synced = false;                             // committed with an fsync
  int64_t now = 0;                                 // the time it is written at
};

void Settlement::hold(ResourceResult&& r) {
  report_.results.push_back(std::move(r));
  if (sink_) final_.push_back(false);
}

void Settlement::emit(ResourceResult&& r) {
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

void Settlement::settle(size_t index) {
  if (!sink_) return;
  final_[index - base_] = true;
  size_t n = handed_;
  while (n < final_.size() && final_[n]) ++n;
  for (size_t i = handed_; i < n; ++i) sink_(std::move(report_.results[i]));
  handed_ = n;
  // Those handed on are erased together, not one by one from the front: a batch
  // of 1,000 staged writes settles one at a time, and erasing each moved the
  // ones behind it (~500,000 moves a batch).
  if (handed_ == final_.size() || handed_ >= kEraseHanded) {
    report_.results.erase(report_.results.begin(), report_.results.begin() + handed_);
    final_.erase(final_.begin(), final_.begin() + handed_);
    base_ += handed_;
    handed_ = 0;
  }
}

void Settlement::record(const Pending& p, Outcome& outcome,
                        std::optional<state::Store::Txn>* shared) {
  count(report_.tally, outcome.verdict());
  // What the kind observed is for the record only (the report never shows
  // it): once recorded, its memory goes (~140 bytes a file, kept for every
  // resource until the report is printed otherwise).
  Finally release([&outcome] { std::string().swap(outcome.observed); });
  if (!ctx_.applying()) return;
  if (auto w = writeFor(p, outcome)) write(p, outcome, *w, shared);
}

// Whether `p`'s outcome needs a write, and which; nullopt in the no-op path.
std::optional<Settlement::Write> Settlement::writeFor(const Pending& p,
                                                      const Outcome& outcome) const {
  Write w;
  // A removal owes its processes only when it deleted something: a cause found
  // gone already changes nothing now (an intent says whether it owes, causesFor).
  const bool changed = (outcome.changed() || deletedNow(outcome)) && outcome.restartsDependents;
  if (changed)  // a no-op cycle looks nothing up
    w.owedBy = ledger_.dependentsOf(std::string(p.id));
  w.paysRestarts =
      (outcome.activation != Activation::None && outcome.verdict() != Verdict::Failed) ||
      outcome.activated;
  if (!w.owedBy && !w.paysRestarts && unchangedAsRecorded(p, outcome)) return std::nullopt;
  w.now = unixNowMs();  // not read in the no-op path
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
// history.
void Settlement::write(const Pending& p, const Outcome& outcome, const Write& w,
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
      store_->oweRestart({process, std::string(p.id), report_.cycle, w.now, "", reload});
  // A reload pays the reloads owed, never a restart; a start or restart pays both.
  if (w.paysRestarts && outcome.activation == Activation::Reload)
    store_->clearOwedReloads(std::string(p.id));
  else if (w.paysRestarts)
    store_->clearOwedRestarts(std::string(p.id));
  if (w.history)
    store_->addHistory({report_.cycle, std::string(p.id), verdictName(outcome.verdict()),
                        outcome.reason(), p.want.str(), outcome.held().str(), w.now});
  if (own) own->commit();
  if (w.owedBy) crashPoint(crash::kAfterChangeRecorded);
}

void Settlement::awaitStaged(Pending p, size_t staged, ResourceResult&& r) {
  awaitingIds_.emplace(p.id);
  hold(std::move(r));
  awaiting_.emplace_back(std::move(p), staged);
}

bool Settlement::needsStaged(const decl::Resource& r) const {
  if (awaitingIds_.empty()) return false;
  for (const auto* deps : {&r.requires_, &r.restartOn, &r.reloadOn})
    for (const auto& dep : *deps)
      if (awaitingIds_.count(dep)) return true;
  return false;
}

void Settlement::commitStaged() {
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
      failures_.failed.insert(id);
      ledger_.failed(id);
    }
    record(p, o, &shared);
    settle(p.resultIndex);
  }
  if (shared) shared->commit();
  awaiting_.clear();
  awaitingIds_.clear();
  stagedMark_ = 0;
}

}  // namespace mesh::apply::cycle
