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
  Impl(const std::string& path, int flags, std::string stateDir, bool writable)
      : db(path, flags), stateDir(std::move(stateDir)), writable(writable) {}

  Db db;  // first: destroyed after the statements that belong to it
  std::string stateDir;
  bool writable;
  bool checked = false;  // checkIntegrity ran (and passed) on this connection
  std::optional<Statements> st;
  bool inTxn = false;
  // History is trimmed once per cycle (the first addHistory of each cycle number),
  // not on every insert: one indexed DELETE per cycle keeps the bound for free.
  int64_t trimmedForCycle = 0;

  // Throws damagedError, having noted it (noteCycleError) when the store is writable.
  [[noreturn]] void damaged(const std::string& detail);

  // Runs f; a SQLITE_CORRUPT failure in it becomes the damaged-store error (as
  // Db::onCorrupt, set by Store::open, makes every statement's do).
  template <typename F>
  auto guard(F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const SqliteError& e) {
      if (e.code() != SQLITE_CORRUPT) throw;
      std::string detail = e.what();
      const std::string prefix = "state store " + db.path() + ": ";
      if (detail.starts_with(prefix)) detail.erase(0, prefix.size());
      damaged(detail);
    }
  }
  // Store::checkIntegrity: PRAGMA quick_check, once per connection.
  void checkIntegrity();
};

// The error for a store whose file is damaged; `detail` says how that showed
// ("quick_check: …", or what failed reading it).
Error damagedError(const std::string& path, const std::string& detail);

}  // namespace mesh::state
