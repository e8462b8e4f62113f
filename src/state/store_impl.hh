// The private state behind Store, shared by open.cc (opening, schema checks) and
// store.cc (reads and writes). Not part of the state layer's interface.
#pragma once

#include <optional>
#include <string>

#include "state/db.hh"
#include "state/store.hh"

namespace mesh::state {

// Statements on the hot paths of a cycle, prepared once per open store.
struct Statements {
  explicit Statements(Db& db);
  Stmt loadRecords, countRecords, record, putRecord, deleteRecord, addHistory, trimHistory;
};

struct Store::Impl {
  Impl(const std::string& path, int flags) : db(path, flags) {}

  Db db;  // first: destroyed after the statements that belong to it
  std::optional<Statements> st;
  bool inTxn = false;
  // History is trimmed once per cycle (the first addHistory of each cycle number),
  // not on every insert: one indexed DELETE per cycle keeps the bound for free.
  int64_t trimmedForCycle = 0;
};

}  // namespace mesh::state
