#include "apply/reconcile.hh"

#include <algorithm>
#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include "apply/applier.hh"
#include "util/error.hh"

namespace mesh::apply {

int64_t nowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

namespace {

Digest recordedHeld(const state::Record* rec) {
  if (!rec) return Digest::none();
  return Digest::parse(rec->wrote).value_or(Digest::none());
}

// The record after this outcome; the store is written only when it differs.
state::Record nextRecord(const state::Record* rec, const std::string& id, const std::string& module,
                         const std::string& kind, const std::string& path, const Digest& want,
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
  if (o.verdict() != Verdict::Failed) {
    r.wrote = o.held().str();
    r.observed = o.observed;
  }
  if (o.changed()) {
    r.changedAt = now;
    r.changedCycle = cycle;
    r.changes += 1;
  }
  return r;
}

class Cycle {
 public:
  Cycle(Context& ctx, const decl::Declaration& d, state::Store* store)
      : ctx_(ctx), decl_(d), store_(store) {}

  CycleReport run(const std::string& text) {
    const int64_t started = nowMs();
    if (store_) records_ = store_->loadRecords();
    if (ctx_.applying()) {
      const int64_t generation = store_->recordGeneration(decl_.digest.str(), text, started);
      report_.cycle = store_->beginCycle(started, generation);
      generation_ = generation;
    }
    for (const auto& r : decl_.resources) converge(r);
    prune();
    report_.ms = nowMs() - started;
    if (ctx_.applying()) {
      state::Cycle c;
      c.cycle = report_.cycle;
      c.startedAt = started;
      c.finishedAt = nowMs();
      c.generation = generation_;
      c.created = report_.created;
      c.updated = report_.updated;
      c.unchanged = report_.unchanged;
      c.removed = report_.removed;
      c.failed = report_.failed;
      c.ms = report_.ms;
      store_->finishCycle(c);
    }
    return std::move(report_);
  }

 private:
  const state::Record* recordOf(const std::string& id, const std::string& kind) const {
    auto it = records_.find(id);
    // A record of another kind under the same id describes something else.
    if (it == records_.end() || it->second.kind != kind) return nullptr;
    return &it->second;
  }

  std::string failedDependency(const decl::Resource& r) const {
    for (const auto* deps : {&r.requires_, &r.restartOn})
      for (const auto& dep : *deps)
        if (failed_.count(dep)) return dep;
    return {};
  }

  void converge(const decl::Resource& r) {
    const std::string kind = decl::kindName(r.kind);
    const state::Record* rec = recordOf(r.id, kind);
    Digest want;
    std::optional<Outcome> outcome;
    if (auto dep = failedDependency(r); !dep.empty()) {
      outcome = Outcome::failed(recordedHeld(rec), fmt::format("skipped: requires {}, which failed", dep));
    } else {
      try {
        const Applier& applier = applierFor(r.kind);
        want = applier.want(ctx_, r);
        outcome = applier.reconcile(ctx_, r, want, rec);
      } catch (const Error& e) {
        outcome = Outcome::failed(recordedHeld(rec), e.what());
      }
    }
    if (outcome->verdict() == Verdict::Failed) failed_.insert(r.id);
    record(r.id, r.module, kind, r.path(), want, rec, *outcome);
  }

  void prune() {
    std::unordered_map<std::string, std::string> declaredPaths;
    std::unordered_set<std::string> declaredIds;
    for (const auto& r : decl_.resources) {
      declaredIds.insert(r.id);
      if (!r.path().empty()) declaredPaths.emplace(r.path(), r.id);
    }
    std::vector<const state::Record*> gone;
    for (const auto& [id, rec] : records_) {
      const auto* declared = recordOf(id, rec.kind);
      if (!declaredIds.count(id) || !declared) gone.push_back(&rec);
    }
    // Deepest paths first, so a directory is emptied before it is removed.
    std::sort(gone.begin(), gone.end(), [](const auto* a, const auto* b) {
      auto depth = [](const std::string& p) { return std::count(p.begin(), p.end(), '/'); };
      if (depth(a->path) != depth(b->path)) return depth(a->path) > depth(b->path);
      return a->id < b->id;
    });
    for (const auto* rec : gone) {
      if (declaredIds.count(rec->id)) {
        // Same id, another kind: the new declaration already took the path over.
        continue;
      }
      if (rec->wrote.empty()) {  // never wrote anything: nothing to remove
        if (ctx_.applying()) store_->deleteRecord(rec->id);
        continue;
      }
      std::optional<Outcome> outcome;
      if (rec->changes == 0) {
        // Only ever adopted as found: mesh-host never wrote it, so never deletes it.
        outcome = Outcome::removed(reasons::kNoLongerDeclared,
                                   "released; left in place: mesh-host never wrote it");
      } else if (auto owner = declaredPaths.find(rec->path);
          !rec->path.empty() && owner != declaredPaths.end()) {
        outcome = Outcome::removed(reasons::kNoLongerDeclared,
                                   fmt::format("released; {} now manages {}", owner->second, rec->path));
      } else {
        try {
          outcome = applierFor(rec->kind).remove(ctx_, *rec);
        } catch (const Error& e) {
          outcome = Outcome::failed(recordedHeld(rec), e.what());
        }
      }
      record(rec->id, rec->module, rec->kind, rec->path, Digest::none(), rec, *outcome);
    }
  }

  void record(const std::string& id, const std::string& module, const std::string& kind,
              const std::string& path, const Digest& want, const state::Record* rec,
              Outcome outcome) {
    switch (outcome.verdict()) {
      case Verdict::Unchanged: ++report_.unchanged; break;
      case Verdict::Created: ++report_.created; break;
      case Verdict::Updated: ++report_.updated; break;
      case Verdict::Removed: ++report_.removed; break;
      case Verdict::Failed: ++report_.failed; break;
    }
    if (ctx_.applying()) {
      const int64_t now = nowMs();
      if (outcome.verdict() == Verdict::Removed) {
        store_->deleteRecord(id);
      } else {
        auto next = nextRecord(rec, id, module, kind, path, want, outcome, report_.cycle, now);
        if (!rec || next != *rec) store_->putRecord(next);
      }
      if (outcome.verdict() != Verdict::Unchanged)
        store_->addHistory({report_.cycle, id, verdictName(outcome.verdict()), outcome.reason(),
                            want.str(), outcome.held().str(), now});
    }
    report_.results.push_back({id, module, kind, std::move(outcome)});
  }

  Context& ctx_;
  const decl::Declaration& decl_;
  state::Store* store_;
  std::unordered_map<std::string, state::Record> records_;
  std::unordered_set<std::string> failed_;
  CycleReport report_;
  int64_t generation_ = 0;
};

}  // namespace

CycleReport runCycle(Context& ctx, const decl::Declaration& d, const std::string& text,
                     state::Store* store) {
  if (ctx.applying() && !store) throw Error("apply needs a state store");
  return Cycle(ctx, d, store).run(text);
}

}  // namespace mesh::apply
