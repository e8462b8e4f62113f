// The records a cycle works from (loaded once, erased as their objects go) and
// the declaration's ids and paths, indexed on first need (a move, a kind change,
// pruning): what the cycle's parts look up, with the records that must outlive
// the resource in hand kept at addresses that never move. A record's kind is the
// store's text; past this boundary the cycle compares kinds as decl::Kind.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "decl/model.hh"
#include "state/records.hh"

namespace mesh::apply::cycle {

class RecordsInHand {
 public:
  state::Records& all() { return records_; }
  const state::Records& all() const { return records_; }

  // The record of the resource in hand, in scratch (valid until the next call;
  // keep() it to hold it longer). nullptr when there is none. A large observed
  // text (a tree's) is lent by the set, not copied: while the resource is in
  // hand, the set's view of its record shows none (nothing looks at a declared
  // resource's record there but through this one).
  const state::Record* recordOf(const std::string& id, decl::Kind kind) {
    records_.giveBack(scratch_.observed);
    auto i = records_.find(id);
    // A record of another kind under the same id describes something else.
    if (!i || kindAt(*i) != kind) return nullptr;
    state::RecordView v = records_[*i];
    const std::string_view observed = v.observed;
    v.observed = {};
    v.copyTo(scratch_);
    if (!records_.lendObserved(*i, scratch_.observed)) scratch_.observed.assign(observed);
    return &scratch_;
  }

  // A record that outlives the resource in hand (its outcome is recorded later).
  const state::Record* keep(const state::Record* rec) {
    if (rec != &scratch_) return rec;
    return &kept_.emplace_back(scratch_);
  }
  const state::Record* keep(const state::RecordView& v) { return &kept_.emplace_back(v.record()); }
  const state::Record* keep(state::Record&& r) { return &kept_.emplace_back(std::move(r)); }

  // Record i's kind; nullopt for a kind this mesh-host does not know.
  std::optional<decl::Kind> kindAt(size_t i) const { return decl::kindFromName(records_.kind(i)); }
  static std::optional<decl::Kind> kindOf(const state::Record& rec) {
    return decl::kindFromName(rec.kind);
  }

  // Whether any record not erased is a process's.
  bool anyProcess() const {
    for (size_t i = 0; i < records_.slots(); ++i)
      if (!records_.erased(i) && kindAt(i) == decl::Kind::Process) return true;
    return false;
  }

  size_t declaredRecords = 0;  // records that matched a declared resource

 private:
  state::Records records_;
  state::Record scratch_;           // the record of the resource in hand (recordOf)
  std::deque<state::Record> kept_;  // records held past it (keep): addresses never move
};

// The declaration's ids and paths, built on first need.
class DeclaredIndex {
 public:
  explicit DeclaredIndex(const decl::Declaration& d) : decl_(d) {}

  bool declares(const std::string& id) {
    build();
    return ids_.count(id) != 0;
  }
  // The id of the resource declared at `path`, if any.
  const std::string* ownerOf(const std::string& path) {
    build();
    auto it = paths_.find(path);
    return it == paths_.end() ? nullptr : &it->second;
  }

 private:
  void build() {
    if (built_) return;
    built_ = true;
    for (const auto& r : decl_.resources) {
      ids_.insert(r.id);
      if (!r.path().empty()) paths_.emplace(r.path(), r.id);
    }
  }
  const decl::Declaration& decl_;
  bool built_ = false;
  std::unordered_set<std::string> ids_;
  std::unordered_map<std::string, std::string> paths_;  // path → id
};

}  // namespace mesh::apply::cycle
