#include "state/records.hh"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>

#include "util/error.hh"

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
  size_t i = next_;
  if (i >= rows_.size() || rows_[i].id() != id) {
    auto it = std::lower_bound(rows_.begin(), rows_.end(), id,
                               [](const Row& r, std::string_view key) { return r.id() < key; });
    if (it == rows_.end() || it->id() != id) return std::nullopt;
    i = static_cast<size_t>(it - rows_.begin());
  }
  next_ = i + 1;
  if (erased_[i]) return std::nullopt;
  return i;
}

RecordView Records::operator[](size_t i) const {
  const Row& r = rows_[i];
  RecordView v;
  std::string_view* fields[] = {&v.id,    &v.module,  &v.kind,   &v.path,   &v.want,
                                &v.wrote, &v.outcome, &v.reason, &v.detail, &v.observed};
  const char* at = r.at;
  for (size_t f = 0; f < std::size(fields); ++f) {
    if (f == kWrote && r.len[f] == kSameAsWant) {
      v.wrote = v.want;
      continue;
    }
    *fields[f] = std::string_view(at, r.len[f]);
    at += r.len[f];
  }
  if (r.large >= 0) v.observed = large_[static_cast<size_t>(r.large)];
  v.changedAt = r.changedAt;
  v.changedCycle = r.changedCycle;
  v.changes = r.changes;
  return v;
}

bool Records::lendObserved(size_t i, std::string& to) {
  const int32_t k = rows_[i].large;
  if (k < 0) return false;
  if (lent_ >= 0) throw Error("records: a second observed text lent before the first came back");
  large_[static_cast<size_t>(k)].swap(to);
  lent_ = k;
  return true;
}

void Records::giveBack(std::string& from) {
  if (lent_ < 0) return;
  large_[static_cast<size_t>(lent_)].swap(from);
  from.clear();
  lent_ = -1;
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

void Records::reserve(size_t n) {
  rows_.reserve(n);
  erased_.reserve(n);
}

void Records::add(const RecordView& v) {
  std::string_view fields[] = {v.id,    v.module,  v.kind,   v.path,   v.want,
                               v.wrote, v.outcome, v.reason, v.detail, v.observed};
  // What the cycle wrote is nearly always what it wanted (every file it
  // converged): held once.
  const bool wroteIsWant = !v.wrote.empty() && v.wrote == v.want;
  const bool large = v.observed.size() >= kLargeText;
  size_t n = 0;
  for (size_t f = 0; f < std::size(fields); ++f) {
    if (fields[f].size() >= kSameAsWant)
      throw Error("resource record {}: a field of {} bytes", v.id, fields[f].size());
    if (!(f == kWrote && wroteIsWant)) n += fields[f].size();
  }
  if (large) {
    n -= v.observed.size();
    fields[std::size(fields) - 1] = {};
  }
  Row& row = rows_.emplace_back();
  if (large) {
    row.large = static_cast<int32_t>(large_.size());
    large_.emplace_back(v.observed);
  }
  char* at = n != 0 ? room(n) : nullptr;
  row.at = at;
  for (size_t f = 0; f < std::size(fields); ++f) {
    if (f == kWrote && wroteIsWant) {
      row.len[f] = kSameAsWant;
      continue;
    }
    if (!fields[f].empty()) std::memcpy(at, fields[f].data(), fields[f].size());
    row.len[f] = static_cast<uint32_t>(fields[f].size());
    at += fields[f].size();
  }
  row.changedAt = v.changedAt;
  row.changedCycle = v.changedCycle;
  row.changes = v.changes;
  erased_.push_back(false);
  ++live_;
}

void Records::sort() {
  const auto byId = [](const Row& a, const Row& b) { return a.id() < b.id(); };
  // Rows written in declaration order usually come back sorted already.
  if (!std::is_sorted(rows_.begin(), rows_.end(), byId))
    std::sort(rows_.begin(), rows_.end(), byId);
}

}  // namespace mesh::state
