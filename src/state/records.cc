#include "state/records.hh"

#include <algorithm>
#include <cstring>

namespace mesh::state {

void RecordView::copyTo(Record& r) const {
  r.id.assign(id);
  r.module.assign(module);
  r.kind.assign(kind);
  r.path.assign(path);
  r.want.assign(want);
  r.wrote.assign(wrote);
  r.outcome.assign(outcome);
  r.reason.assign(reason);
  r.detail.assign(detail);
  r.changedAt = changedAt;
  r.changedCycle = changedCycle;
  r.changes = changes;
  r.observed.assign(observed);
}

std::optional<size_t> Records::find(std::string_view id) const {
  auto it = std::lower_bound(rows_.begin(), rows_.end(), id,
                             [](const RecordView& v, std::string_view key) { return v.id < key; });
  if (it == rows_.end() || it->id != id) return std::nullopt;
  const auto i = static_cast<size_t>(it - rows_.begin());
  if (erased_[i]) return std::nullopt;
  return i;
}

void Records::erase(size_t i) {
  if (erased_[i]) return;
  erased_[i] = true;
  --live_;
}

char* Records::room(size_t n) {
  constexpr size_t kBlock = 256 * 1024;
  if (n > cap_ - used_) {
    cap_ = std::max(kBlock, n);
    used_ = 0;
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(cap_));
  }
  // Blocks never move: every view into them stays valid.
  char* at = blocks_.back().get() + used_;
  used_ += n;
  return at;
}

void Records::add(const RecordView& v) {
  RecordView& row = rows_.emplace_back(v);
  std::string_view* fields[] = {&row.id,    &row.module,  &row.kind,   &row.path,   &row.want,
                                &row.wrote, &row.outcome, &row.reason, &row.detail, &row.observed};
  size_t n = 0;
  for (const auto* f : fields) n += f->size();
  char* at = room(n);
  for (auto* f : fields) {
    if (f->empty()) {
      *f = {};
      continue;
    }
    std::memcpy(at, f->data(), f->size());
    *f = std::string_view(at, f->size());
    at += f->size();
  }
  erased_.push_back(false);
  ++live_;
}

void Records::sort() {
  const auto byId = [](const RecordView& a, const RecordView& b) { return a.id < b.id; };
  // Rows written in declaration order usually come back sorted already.
  if (!std::is_sorted(rows_.begin(), rows_.end(), byId))
    std::sort(rows_.begin(), rows_.end(), byId);
}

}  // namespace mesh::state
