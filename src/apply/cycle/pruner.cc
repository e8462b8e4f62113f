#include "apply/cycle/pruner.hh"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "apply/applier.hh"
#include "apply/originals.hh"
#include "apply/process_info.hh"
#include "util/beneath.hh"
#include "util/error.hh"

namespace mesh::apply::cycle {

namespace {

// A removal that deleted what was there (a plan: would delete it).
bool deletedIt(const Removal& removal) {
  return removal.detail() == "deleted" || removal.detail() == "would delete";
}

// Processes first (stopped before what they use goes), then deepest paths
// first, so a directory is emptied before it is removed; accounts last, users
// before groups (groupdel refuses a group that is still a user's primary group;
// a file left owned by a removed account is never removed for it anyway).
int pruningRank(const state::Record& rec) {
  const auto kind = RecordsInHand::kindOf(rec);
  if (kind == decl::Kind::Process) return 0;
  if (kind == decl::Kind::User) return 2;
  if (kind == decl::Kind::Group) return 3;
  return 1;
}

void pruningOrder(std::vector<const state::Record*>& gone) {
  std::sort(gone.begin(), gone.end(), [](const auto* a, const auto* b) {
    const int ra = pruningRank(*a), rb = pruningRank(*b);
    if (ra != rb) return ra < rb;
    auto depth = [](const std::string& p) { return std::count(p.begin(), p.end(), '/'); };
    if (depth(a->path) != depth(b->path)) return depth(a->path) > depth(b->path);
    return a->id < b->id;
  });
}

bool ownsInstalled(const state::Record& rec) {
  try {
    return applierFor(rec.kind).ownsInstalled(rec);
  } catch (const Error&) {
    return false;  // a kind this mesh-host does not know
  }
}

}  // namespace

// A process no longer declared whose service a declared process of another id
// runs now (both took the default `<module>.service`): stopped and removed
// first, before the new one installs its unit — stop, then install, in one
// cycle. Pruning at the end would remove the unit just installed.
bool Pruner::removeServicesTakenOver() {
  const auto& serviceOf = ledger_.serviceOf();
  if (serviceOf.empty()) return false;
  std::unordered_map<std::string, std::string> declaredService;  // service → process id
  for (const auto& [id, service] : serviceOf) declaredService.emplace(service, id);
  auto& records = records_.all();
  bool removed = false;
  for (size_t i = 0; i < records.slots(); ++i) {
    if (records.erased(i) || records_.kindAt(i) != decl::Kind::Process) continue;
    const state::RecordView v = records[i];
    if (serviceOf.count(std::string(v.id))) continue;  // still declared
    const state::Record* rec = records_.keep(v);
    const auto info = processInfo(*rec);
    if (!info || !declaredService.count(info->service)) continue;
    pruneOne(*rec);
    records.erase(i);
    removed = true;
  }
  // What the declared one finds is what is left: observed anew.
  if (removed) ctx_.expectServices(ledger_.services(), ledger_.anyOwed());
  return removed;
}

void Pruner::prune() {
  auto& records = records_.all();
  forgetOriginalsNoLongerNeeded();
  // Every record belongs to a declared resource (the usual cycle): nothing to prune.
  if (records_.declaredRecords == records.size()) return;
  std::vector<const state::Record*> gone;
  for (size_t i = 0; i < records.slots(); ++i)
    if (!records.erased(i) && !declared_.declares(std::string(records[i].id)))
      gone.push_back(records_.keep(records[i]));
  pruningOrder(gone);
  for (const auto* rec : gone) pruneOne(*rec);
}

// An entry of apply/originals.hh is forgotten once neither the declaration nor a
// record names its resource: a cycle after the one that put it back, so that a
// crash between putting it back and dropping the record puts it back again.
void Pruner::forgetOriginalsNoLongerNeeded() {
  if (!ctx_.applying()) return;
  std::vector<std::string> unneeded;
  for (const auto& id : ctx_.originals().ids())
    if (!declared_.declares(id) && !records_.all().find(id)) unneeded.push_back(id);
  for (const auto& id : unneeded) ctx_.originals().forget(id);
}

// With whatever else no longer declared lies beneath them, in pruning's order —
// so that their removal restarts (reloads) the process, as their change would
// (RestartLedger::causesFor). One whose path another resource now declares is
// left to the usual order (that resource may replace it first).
void Pruner::pruneFormerCauses(const std::vector<FormerCause>& causes) {
  auto& records = records_.all();
  std::vector<const state::Record*> gone;
  for (const auto& f : causes) {
    auto at = records.find(f.cause);
    if (!at) continue;  // gone already (the cause of another process too)
    const std::string path(records[*at].path);
    if (!path.empty() && declared_.ownerOf(path)) continue;
    for (size_t i = 0; i < records.slots(); ++i) {
      if (records.erased(i)) continue;
      const auto rec = records[i];
      const bool beneath = !path.empty() && rec.path.size() > path.size() &&
                           rec.path.starts_with(path) && rec.path[path.size()] == '/';
      if (i != *at && (!beneath || declared_.declares(std::string(rec.id)) ||
                       declared_.ownerOf(std::string(rec.path))))
        continue;
      gone.push_back(records_.keep(rec));
      records.erase(i);
    }
  }
  pruningOrder(gone);
  for (const auto* rec : gone) pruneOne(*rec);
}

// Removes (or releases) what mesh-host wrote for a record no longer declared.
// A process's former cause owes the process a restart (reload) when it is
// deleted: the intent is synced before, as for any change.
void Pruner::pruneOne(const state::Record& rec) {
  // Installed by mesh-host though never recorded as created (a process whose
  // first start failed): removed like what it wrote.
  const bool installed = ownsInstalled(rec);
  // What was there before mesh-host first wrote (or an absent removed), and
  // the resource's on-remove (apply/originals.hh).
  std::optional<Original> kept;
  std::string keptError;
  try {
    if (!rec.path.empty()) kept = ctx_.originals().find(rec.id);
  } catch (const Error& e) {
    keptError = e.what();
  }
  const bool absent = RecordsInHand::kindOf(rec) == decl::Kind::Absent;
  const bool keep = kept && kept->onRemove == decl::OnRemove::Keep;
  const bool restore =
      kept && kept->restorable() && kept->keptFrom(rec.path) &&
      (absent ? ctx_.settings().rollback : kept->onRemove == decl::OnRemove::Restore);
  if (rec.wrote.empty() && !installed && !restore) {  // never wrote anything: nothing to remove
    if (ctx_.applying()) store_->deleteRecord(rec.id);
    return;
  }
  std::optional<Outcome> outcome;
  const state::Record* claimed = nullptr;  // the record the removal's claim wrote, if it did
  const std::string* owner = rec.path.empty() ? nullptr : declared_.ownerOf(rec.path);
  if (!keptError.empty()) {
    outcome = Outcome::failed(&rec, keptError);
  } else if (owner) {
    outcome = Outcome::of(
        Removal::released(fmt::format("left in place: {} now manages {}", *owner, rec.path)));
  } else if (keep) {
    outcome = Outcome::of(Removal::released("left in place: on-remove = \"keep\""));
  } else if (absent && !restore) {
    Step step(ctx_);
    outcome = Outcome::of(applierFor(rec.kind).remove(step, rec));
  } else if (rec.changes == 0 && !installed && !restore) {
    // Only ever adopted as found: mesh-host never wrote it, so never deletes it.
    outcome = Outcome::of(Removal::released("left in place: mesh-host never wrote it"));
  } else {
    const bool owes = ledger_.dependentsOf(rec.id) != nullptr;
    Step step(ctx_);
    if (owes) ledger_.oweBeforeChange(step, rec.id, RestartLedger::kRemovedIntent);
    // What the removal owes, kept in its record before it acts (a service's
    // restart without its drop-in): committed, and the record from then on.
    if (ctx_.applying())
      step.setClaimInstall([&](const std::string& observed) {
        state::Record c = rec;
        c.observed = observed;
        state::Store::Txn txn(*store_);
        store_->putRecord(c);
        txn.commit();
        claimed = records_.keep(std::move(c));
      });
    try {
      // Put back already (a crash cut the cycle that did it short), or never
      // changed from it: nothing to write, nothing restarts on it; an intent
      // says whether a cycle before this one put it back (RestartLedger).
      if (restore && ctx_.originals().holds(rec.path, *kept))
        outcome = Outcome::of(Removal::alreadyRestored(ctx_.planning(), kept->describe()));
      // Edited since mesh-host wrote it: left in place, as removal leaves it.
      else if (restore && !absent && !applierFor(rec.kind).holdsWhatItWrote(ctx_, rec))
        outcome =
            Outcome::of(Removal::released("left in place: modified since mesh-host wrote it"));
      else
        outcome = Outcome::of(restore ? ctx_.originals().giveBack(step, rec.path, *kept)
                                      : removeRecorded(rec, step));
    } catch (const Error& e) {
      outcome = Outcome::failed(claimed ? claimed : &rec, e.what());
    }
    // Deleted now (or found gone: an intent then says whether this cycle's
    // predecessor deleted it, see RestartLedger).
    if (owes && outcome->verdict() == Verdict::Removed) ledger_.holdsRemoved(rec.id);
  }
  if (deletedNow(*outcome)) ledger_.changed(rec.id);
  if (!outcome->gone()) ledger_.prunedKept(rec.id);
  Pending p{rec.id,
            rec.module,
            rec.kind,
            rec.path,
            Digest::none(),
            claimed ? claimed : &rec,
            settlement_.nextIndex()};
  ResourceResult res{rec.id, rec.module, rec.kind, std::move(*outcome), rec.path};
  settlement_.record(p, res.outcome);
  settlement_.emit(std::move(res));
}

// When a record says mesh-host wrote the object in the way (under another id,
// or this id as another kind) and nobody changed it since, it goes — the same
// rule as pruning.
std::string Pruner::makeRoom(const decl::Resource& r, Step& step) {
  settlement_.commitStaged();  // what it erases from the records may be a staged write's record
  auto& records = records_.all();
  std::optional<size_t> oldAt;
  for (size_t i = 0; i < records.slots(); ++i)
    if (const auto& rec = records[i]; !records.erased(i) && rec.path == r.path() &&
                                      records_.kindAt(i) != r.kind && rec.changes > 0 &&
                                      !rec.wrote.empty())
      oldAt = i;
  if (!oldAt) return {};
  const state::Record* old = records_.keep(records[*oldAt]);
  const Removal removal = applierFor(old->kind).remove(step, *old);
  if (removal.verdict() != Verdict::Removed || !deletedIt(removal)) return {};
  const std::string reason =
      old->id == r.id ? fmt::format("kind changed: {} -> {}", old->kind, decl::kindName(r.kind))
                      : fmt::format("replaces the {} of {}", old->kind, old->id);
  const std::string oldId = old->id;
  if (ctx_.planning())
    ctx_.planRemoved(r.path());
  else if (!declared_.declares(oldId))
    store_->deleteRecord(oldId);
  records.erase(*oldAt);  // its object is gone: nothing of it is left to prune
  return reason;
}

// Unless someone changed it since or another resource declares it now.
Outcome Pruner::leaveOldPath(const decl::Resource& r, const state::Record& old, const Outcome& now,
                             Step& step) {
  std::string left;
  bool deleted = false;
  if (const std::string* owner = declared_.ownerOf(old.path)) {
    left = fmt::format("old path now managed by {}", *owner);
  } else if (old.changes == 0 || old.wrote.empty()) {
    left = "old path left in place: mesh-host never wrote it";
  } else {
    try {
      // What was at the old path before mesh-host goes back there (unless
      // edited since, or there already); else what it wrote there goes.
      std::optional<Original> kept = ctx_.originals().find(old.id);
      const bool mayRestore = kept && kept->restorable() && !kept->path.empty() &&
                              kept->path == old.path && kept->onRemove == decl::OnRemove::Restore;
      const bool there = mayRestore && ctx_.originals().holds(old.path, *kept);
      const bool restore = mayRestore && !there && applierFor(old.kind).holdsWhatItWrote(ctx_, old);
      const Removal removal = there ? Removal::alreadyRestored(ctx_.planning(), kept->describe())
                              : restore ? ctx_.originals().giveBack(step, old.path, *kept)
                                        : removeRecorded(old, step);
      deleted = restore || (!there && deletedIt(removal));
      if (there || restore)
        left = fmt::format("old path {}: {}",
                           there             ? "as it was before mesh-host"
                           : ctx_.planning() ? "would be given back what was there before mesh-host"
                                             : "given back what was there before mesh-host",
                           kept->describe());
      else
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
  if (now.verdict() == Verdict::Unchanged && !deleted && ledger_.intendedBefore(r.id, now.held())) {
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

// What mesh-host wrote at `rec`'s path, removed by its kind (only when nobody
// changed it since). A parent on the way that is no longer a directory: when a
// file (or any non-directory) stands there, it cannot hold what was written, so
// that is already gone; a link is never followed, so whatever lies behind it is
// left in place, untouched. Either way the record goes.
Removal Pruner::removeRecorded(const state::Record& rec, Step& step) {
  try {
    return applierFor(rec.kind).remove(step, rec);
  } catch (const PathRefused& e) {
    if (e.found == PathRefused::Found::NotDirectory)
      return Removal::removed(fmt::format("already gone: {} is not a directory now", e.component));
    if (e.found == PathRefused::Found::Link)
      return Removal::released(
          fmt::format("left in place: {} is a symbolic link now, which mesh-host does not follow",
                      e.component));
    throw;
  }
}

}  // namespace mesh::apply::cycle
