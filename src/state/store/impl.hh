// The private state behind Store, shared by store/open.cc (opening, schema checks)
// and the files of store/ that read and write its tables. Not part of the state
// layer's interface.
#pragma once

#include <optional>
#include <string>

#include "state/db.hh"
#include "state/store.hh"

namespace mesh::state {

// Statements on the hot paths of a cycle, each prepared the first time it is used
// and kept (finalized with the store) from then on: a no-op cycle reads the records
// and writes none, so it never pays for parsing the writes' statements.
class Statements {
 public:
  explicit Statements(Db& db) : db_(db) {}
  Stmt& loadRecords();
  Stmt& countRecords();
  Stmt& record();
  Stmt& putRecord();
  Stmt& deleteRecord();
  Stmt& addHistory();
  Stmt& trimHistory();

 private:
  // `slot`, prepared from `sql` if it is not yet.
  Stmt& lazy(std::optional<Stmt>& slot, const char* sql, const char* purpose);

  Db& db_;
  std::optional<Stmt> loadRecords_, countRecords_, record_, putRecord_, deleteRecord_, addHistory_,
      trimHistory_;
};

// What a write is to the store's durability (docs/state-store.md, "WAL and
// durability"): the one place that decides what a cycle may leave unsynced. Every
// write method of Store names its kind through Impl::wrote.
enum class WriteKind {
  // What a cycle did, never what a later one acts on: its own row (begun,
  // finished) and a known generation's times and source. Committed without a
  // sync, and closing syncs nothing for it: a power cut may take back the last
  // of these rows (the next cycle then sweeps as after a crash), never corrupt.
  // All a no-op cycle writes, so a no-op syncs nothing.
  Bookkeeping,
  // What later cycles act on: records, owed restarts and reloads, history, a new
  // generation (a rollback's text), the pushed declaration. Durable once the
  // cycle that wrote it finishes (finishCycle syncs the WAL), or the store
  // closes, whichever comes first; at its commit when that is Sync::Full.
  Kept,
  // The compiled declaration: `apply` reads it from the main file alone
  // (immutable mode, which ignores the WAL), so closing checkpoints the WAL into
  // the main file (syncing both) once it was written.
  Checkpointed,
};

struct Store::Impl {
  Impl(const std::string& path, int flags, std::string stateDir, bool writable,
       const char* vfs = nullptr)
      : db(path, flags, vfs), stateDir(std::move(stateDir)), writable(writable) {}
  // Makes the store as durable as its writes' kinds ask (WriteKind) before
  // SQLite closes it.
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Notes a write of `kind` (in the current transaction, or autocommitted).
  void wrote(WriteKind kind);
  // A Sync::Full commit synced the WAL, every frame before it too.
  void synced() { unsyncedKept = false; }
  // Syncs the WAL now (what Kept writes wait for); false when the sync failed.
  bool syncWal();

  Db db;  // first: destroyed after the statements that belong to it
  std::string stateDir;
  bool writable;
  bool checked = false;  // checkIntegrity ran (and passed) on this connection
  // Schema version 2 or later: the generations' texts are in generation_texts.
  // False only for a read-only open of a version-1 store (not migrated: read-only).
  bool textsApart = true;
  // The schema version the store has (older than kSchemaVersion only when read-only).
  int64_t version = Store::kSchemaVersion;
  std::optional<Statements> st;
  bool inTxn = false;
  bool unsyncedKept = false;       // a Kept write committed (or pending) since the last sync
  bool checkpointAtClose = false;  // a Checkpointed write was made
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
  // Gives free pages back to the file system when too many piled up
  // (store/retention.cc); returns how many.
  int64_t giveBackFreePages();
  // Store::checkIntegrity: PRAGMA quick_check, once per connection.
  void checkIntegrity();
};

// The error for a store whose file is damaged; `detail` says how that showed
// ("quick_check: …", or what failed reading it).
Error damagedError(const std::string& path, const std::string& detail);

}  // namespace mesh::state
