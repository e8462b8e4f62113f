// Every resource record of the store, held compactly for one cycle: the rows'
// text in a few large blocks, one fixed-size entry per record pointing into
// them, sorted by id. Loading copies bytes, not strings; a lookup is a binary
// search; a `Record` is built only for the record in hand (Records::at), into
// storage the caller reuses.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "state/store.hh"

namespace mesh::state {

// One record's fields, viewing the set's blocks.
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
  std::optional<size_t> find(std::string_view id) const;
  const RecordView& operator[](size_t i) const { return rows_[i]; }
  // Every index, erased ones included: check erased().
  size_t slots() const { return rows_.size(); }
  bool erased(size_t i) const { return erased_[i]; }
  void erase(size_t i);
  // Records not erased.
  size_t size() const { return live_; }

  // Building (Store::loadRecordSet): add every row, then sort.
  // The views of `v` are copied into the set's own blocks.
  void add(const RecordView& v);
  void sort();

 private:
  char* room(size_t n);

  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t cap_ = 0, used_ = 0;  // of the last block
  std::vector<RecordView> rows_;
  std::vector<bool> erased_;
  size_t live_ = 0;
};

}  // namespace mesh::state
