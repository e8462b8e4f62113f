// Every resource record of the store, held compactly for one cycle: the rows'
// text in a few large blocks, one fixed-size entry per record (where its fields
// start in a block, and their lengths: 80 bytes) pointing into them, sorted by
// id; a large observed text (a tree's) is held on its own and lent, not copied. Loading copies
// bytes, not strings; a lookup is a binary search; a view of a record's fields is made for the
// record in hand (Records::operator[]), and a `Record` only when asked (RecordView::copyTo), into
// storage the caller reuses.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "state/store/records.hh"

namespace mesh::state {

// One record's fields, viewing the set's blocks (valid while the set lives).
struct RecordView {
  std::string_view id, module, kind, path, want, wrote, outcome, reason, detail, observed;
  int64_t changedAt = 0, changedCycle = 0, changes = 0;

  // Copies every field into `r` (reusing its strings' storage).
  void copyTo(Record& r) const;
  Record record() const {
    Record r;
    copyTo(r);
    return r;
  }
};

class Records {
 public:
  Records() = default;
  Records(Records&&) noexcept = default;
  Records& operator=(Records&&) noexcept = default;

  // Index of the record of `id`, nullopt when there is none (or it was erased).
  // The record after the last one found is tried first: a cycle asks in
  // declaration order, which is usually the records' order too.
  std::optional<size_t> find(std::string_view id) const;
  // A view of record i's fields, made on the spot.
  RecordView operator[](size_t i) const;
  // Record i's kind alone.
  std::string_view kind(size_t i) const {
    const Row& r = rows_[i];
    return {r.at + r.len[0] + r.len[1], r.len[2]};
  }
  // Every index, erased ones included: check erased().
  size_t slots() const { return rows_.size(); }
  bool erased(size_t i) const { return erased_[i]; }
  void erase(size_t i);
  // Records not erased.
  size_t size() const { return live_; }

  // A large observed text (a tree's record: ~220 bytes a file) is held on its
  // own, and lent rather than copied to the one record in hand: moved into `to`
  // (whose text comes back here), after which record i's view shows no observed
  // text until giveBack. Returns false, lending nothing, for a text held in the
  // blocks (copy it). One loan at a time.
  bool lendObserved(size_t i, std::string& to);
  void giveBack(std::string& from);

  // Building (Store::loadRecordSet): room for about `n` rows (more may come),
  // add every row, then sort. The views of `v` are copied into the set's own
  // blocks.
  void reserve(size_t n);
  void add(const RecordView& v);
  void sort();

 private:
  // A record as held: its fields lie one after another from `at`, in
  // RecordView's order (id, module, kind, path, want, wrote, outcome, reason,
  // detail, observed), each of the length given; `wrote`'s length kSameAsWant
  // says it is the same as `want`, and not held again.
  // An observed text from kLargeText bytes on is held in large_ (Row::large its
  // index), not in the blocks.
  static constexpr size_t kWrote = 5;
  static constexpr uint32_t kSameAsWant = UINT32_MAX;
  static constexpr size_t kLargeText = 64 * 1024;
  struct Row {
    const char* at = nullptr;
    uint32_t len[10] = {};
    int32_t large = -1;
    int64_t changedAt = 0, changedCycle = 0, changes = 0;
    std::string_view id() const { return {at, len[0]}; }
  };

  char* room(size_t n);

  std::vector<std::unique_ptr<char[]>> blocks_;
  std::vector<std::string> large_;
  int32_t lent_ = -1;          // the large_ text lent out, if any
  size_t cap_ = 0, used_ = 0;  // of the last block
  std::vector<Row> rows_;
  std::vector<bool> erased_;
  size_t live_ = 0;
  mutable size_t next_ = 0;  // find()'s first guess
};

}  // namespace mesh::state
