// Store::open: finding or creating the file, deciding whether it is ours and of a
// schema we understand, and setting up the connection.
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "state/cycle_error.hh"
#include "state/reader_vfs.hh"
#include "state/schema_sql.hh"
#include "state/stop_note.hh"
#include "state/store.hh"
#include "state/store/impl.hh"
#include "util/fd.hh"
#include "util/fs.hh"
#include "util/trusted_path.hh"

namespace mesh::state {

namespace {

std::string absoluteStateDir(const std::string& stateDir) {
  return std::filesystem::absolute(stateDir).lexically_normal().string();
}

// "MESH" in ASCII: tells a mesh-host store from any other SQLite file, so that a
// --state-dir pointed at the wrong place fails loudly instead of growing our tables
// inside someone else's database.
constexpr int64_t kApplicationId = 0x4D455348;

// SQLite gives the -wal and -shm files the main file's mode, so creating state.db
// ourselves with 0640 (whatever the umask) makes all three group-readable and no more.
void createDbFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640));
  if (!fd) {
    if (errno == EEXIST) return;
    throwSys(fmt::format("cannot create state store {}", path));
  }
  if (::fchmod(fd.get(), 0640) != 0) throwSys(fmt::format("cannot set the mode of {}", path));
}

// The -shm, made 0600 before SQLite opens it (SQLite would give it the main
// file's 0640, and does to an empty one): whoever can open it can take a read
// lock on the bytes a WAL writer locks, and keep every cycle waiting. Readers of
// the group use readerVfs() instead. One an older mesh-host made 0640 — which a
// reader may hold open for ever — is replaced by a new file: the WAL index is
// rebuilt from the WAL (nothing in it is data). Called before this process opens
// the store.
void createShmFile(const std::string& path) {
  const std::string shm = path + "-shm";
  const auto old = lstatPath(shm);
  if (old && S_ISREG(old->st_mode) && (old->st_mode & 077) == 0 && old->st_uid == ::geteuid())
    return;
  // Made aside, then renamed into place: never an empty moment, and one that
  // another opener of this store put there meanwhile is left alone.
  const std::string fresh = fmt::format("{}.new-{}", shm, ::getpid());
  (void)::unlink(fresh.c_str());
  Fd fd(::open(fresh.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) throwSys(fmt::format("cannot create {}", fresh));
  // Not empty: SQLite gives an empty -shm it opens the main file's mode. It
  // truncates it to 3 bytes when it first sets it up, never to 0.
  if (::fchmod(fd.get(), 0600) != 0 || ::write(fd.get(), "", 1) != 1) {
    (void)::unlink(fresh.c_str());
    throwSys(fmt::format("cannot write {}", fresh));
  }
  const auto now = lstatPath(shm);
  const bool unchanged = old ? now && now->st_ino == old->st_ino : !now;
  if (!unchanged || ::rename(fresh.c_str(), shm.c_str()) != 0) (void)::unlink(fresh.c_str());
}

// Whether this process may not open the store's -shm (0600): a reader of the
// state directory's group, who reads through readerVfs().
bool readsWithoutShm(const std::string& path) {
  if (::geteuid() == 0) return false;
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && st.st_uid != ::geteuid();
}

constexpr const char* kQuickCheck = "quick_check";

[[noreturn]] void throwNotOurs(const std::string& path, const std::string& why) {
  throw Error("{} is not a mesh-host state store ({}); move it aside to start afresh", path, why);
}

// The application id in the file's header, read directly: when SQLite finds the
// file corrupt it will not answer PRAGMA application_id, yet a damaged store of
// ours is to be told from someone else's database. nullopt: no SQLite header.
std::optional<int64_t> headerApplicationId(const std::string& path) {
  unsigned char h[100];
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd || ::pread(fd.get(), h, sizeof h, 0) != static_cast<ssize_t>(sizeof h))
    return std::nullopt;
  if (std::memcmp(h, "SQLite format 3", 16) != 0) return std::nullopt;
  return (int64_t{h[68]} << 24) | (int64_t{h[69]} << 16) | (int64_t{h[70]} << 8) | int64_t{h[71]};
}

// Creates the schema on an empty database. BEGIN IMMEDIATE takes the write lock
// before looking, so two processes opening a new store at once create it once.
void createSchema(Db& db) {
  db.exec("BEGIN IMMEDIATE", "starting the schema creation");
  Finally rollback([&] { sqlite3_exec(db.get(), "ROLLBACK", nullptr, nullptr, nullptr); });
  if (db.queryInt("SELECT count(*) FROM sqlite_schema", "counting tables") == 0) {
    db.exec(kSchemaSql, "creating the schema");
    auto stamp = fmt::format("PRAGMA application_id = {}; PRAGMA user_version = {}", kApplicationId,
                             Store::kSchemaVersion);
    db.exec(stamp.c_str(), "stamping the schema version");
  }
  db.exec("COMMIT", "committing the schema creation");
  rollback.dismiss();
}

// Parts that came within schema version 1 (generations.serial, fleet_declaration,
// compiled_declaration,
// owed_restarts.intent, owed_restarts.kind, cycles.node, cycles.released and cycles.skipped):
// a store made before them gains them on its first read-write open. Idempotent.
// The columns are looked for in a version-1 store only: a version-2 store has every
// one (made with them, or migrated after they were added), and the look costs each
// open a statement per column. A part added from now on comes with a version.
void addLateSchema(Db& db, int64_t version) {
  // A table is made again even in a current store: the compiled form's, dropped,
  // would fail every apply, and CREATE … IF NOT EXISTS is cheap.
  db.exec(
      "CREATE TABLE IF NOT EXISTS fleet_declaration (key TEXT PRIMARY KEY NOT NULL, revision "
      "INTEGER NOT NULL, envelope TEXT NOT NULL, received_at INTEGER NOT NULL)",
      "adding the fleet_declaration table");
  db.exec(
      "CREATE TABLE IF NOT EXISTS compiled_declaration (key TEXT PRIMARY KEY NOT NULL, form "
      "BLOB NOT NULL)",
      "adding the compiled_declaration table");
  // Made beside the others like them (additive: a store without it reads as
  // "nothing restarts on anything yet", which the next cycle writes).
  db.exec(
      "CREATE TABLE IF NOT EXISTS process_causes (process TEXT NOT NULL, cause TEXT NOT NULL, "
      "kind TEXT NOT NULL DEFAULT 'restart', PRIMARY KEY (process, cause))",
      "adding the process_causes table");
  if (version >= 2) return;
  if (db.queryInt("SELECT count(*) FROM pragma_table_info('generations') WHERE name = 'serial'",
                  "looking for generations.serial") == 0)
    db.exec("ALTER TABLE generations ADD COLUMN serial INTEGER", "adding generations.serial");
  if (db.queryInt("SELECT count(*) FROM pragma_table_info('owed_restarts') WHERE name = 'intent'",
                  "looking for owed_restarts.intent") == 0)
    db.exec("ALTER TABLE owed_restarts ADD COLUMN intent TEXT NOT NULL DEFAULT ''",
            "adding owed_restarts.intent");
  // Every row of a store from before reload-on owes a restart: the default.
  if (db.queryInt("SELECT count(*) FROM pragma_table_info('owed_restarts') WHERE name = 'kind'",
                  "looking for owed_restarts.kind") == 0)
    db.exec("ALTER TABLE owed_restarts ADD COLUMN kind TEXT NOT NULL DEFAULT 'restart'",
            "adding owed_restarts.kind");
  if (db.queryInt("SELECT count(*) FROM pragma_table_info('cycles') WHERE name = 'node'",
                  "looking for cycles.node") == 0)
    db.exec("ALTER TABLE cycles ADD COLUMN node TEXT NOT NULL DEFAULT ''", "adding cycles.node");
  for (const char* column : {"released", "skipped"})
    if (db.queryInt(
            fmt::format("SELECT count(*) FROM pragma_table_info('cycles') WHERE name = '{}'",
                        column)
                .c_str(),
            "looking for cycles' outcome columns") == 0)
      db.exec(fmt::format("ALTER TABLE cycles ADD COLUMN {} INTEGER NOT NULL DEFAULT 0", column)
                  .c_str(),
              "adding cycles' outcome columns");
}

// Version 1 -> 2: each generation's text moves out of `generations`, whose row every
// apply updates (SQLite rewrites a whole row to update it, reading a text of
// megabytes back out of its overflow pages), into `generation_texts`, written once.
// One transaction; the version is looked at again under the write lock, so two
// processes opening the store at once migrate it once. Runs after addLateSchema:
// the version-1 store it starts from is complete.
void migrateToVersion2(Db& db) {
  db.exec("BEGIN IMMEDIATE", "starting the migration to schema version 2");
  Finally rollback([&] { sqlite3_exec(db.get(), "ROLLBACK", nullptr, nullptr, nullptr); });
  if (db.queryInt("PRAGMA user_version", "reading the schema version") == 1) {
    db.exec(
        "CREATE TABLE generation_texts (generation INTEGER PRIMARY KEY, text TEXT NOT NULL);"
        "INSERT INTO generation_texts (generation, text) SELECT generation, text FROM "
        "generations ORDER BY generation;"
        "ALTER TABLE generations DROP COLUMN text;"
        "PRAGMA user_version = 2",
        "migrating the store to schema version 2 (the generations' texts apart)");
  }
  db.exec("COMMIT", "committing the migration to schema version 2");
  rollback.dismiss();
}

// Version 2 -> 3: the store is trimmed to bounds (store/retention.cc). Each
// generation keeps how its newest finished cycle ended in its own row (cycles are
// trimmed), filled here from the cycles; the bounds of the last trim get a table.
void migrateToVersion3(Db& db) {
  db.exec("BEGIN IMMEDIATE", "starting the migration to schema version 3");
  Finally rollback([&] { sqlite3_exec(db.get(), "ROLLBACK", nullptr, nullptr, nullptr); });
  if (db.queryInt("PRAGMA user_version", "reading the schema version") == 2) {
    for (const char* column : {"last_cycle", "last_failed"})
      if (db.queryInt(
              fmt::format("SELECT count(*) FROM pragma_table_info('generations') WHERE name = '{}'",
                          column)
                  .c_str(),
              "looking for the generations' health columns") == 0)
        db.exec(
            fmt::format("ALTER TABLE generations ADD COLUMN {} INTEGER NOT NULL DEFAULT 0", column)
                .c_str(),
            "adding the generations' health columns");
    db.exec(
        "UPDATE generations SET last_cycle = coalesce((SELECT max(cycle) FROM cycles c WHERE "
        "c.generation = generations.generation AND c.finished_at != 0), 0);"
        "UPDATE generations SET last_failed = coalesce((SELECT failed FROM cycles c WHERE "
        "c.cycle = generations.last_cycle), 0);"
        "CREATE TABLE IF NOT EXISTS retention (id INTEGER PRIMARY KEY CHECK (id = 1), "
        "keep_generations INTEGER "
        "NOT NULL, keep_cycles INTEGER NOT NULL, keep_days INTEGER NOT NULL, min_generations "
        "INTEGER NOT NULL, min_cycles INTEGER NOT NULL, trimmed_at INTEGER NOT NULL);"
        "PRAGMA user_version = 3",
        "migrating the store to schema version 3 (bounded: generations keep their health)");
  }
  db.exec("COMMIT", "committing the migration to schema version 3");
  rollback.dismiss();
}

// Trimming gives pages back with PRAGMA incremental_vacuum. A new store is in WAL
// mode before its first table, which fixes its vacuum mode, and a store made before
// schema version 3 has none either: switching it on takes one VACUUM (of a new
// store: nothing to copy; of an older one, a copy of the whole file, atomic: a crash
// leaves the store as it was). Best effort: when it cannot run (too little room
// for the copy), free pages are reused but not given back, and the next read-write
// open tries again.
void switchOnIncrementalVacuum(Db& db) {
  if (db.queryInt("PRAGMA auto_vacuum", "reading the vacuum mode") == 2) return;
  (void)sqlite3_exec(db.get(), "PRAGMA auto_vacuum = INCREMENTAL; VACUUM", nullptr, nullptr,
                     nullptr);
}

// Decides whether this file is ours and of a version we understand; creates the
// schema when the file is empty, and migrates an older one, when we may write.
// Returns the schema version the store now has (an older one only when read-only).
int64_t prepare(Db& db, Store::Access access) {
  int64_t appId = 0, version = 0, tables = 0;
  try {
    appId = db.queryInt("PRAGMA application_id", "reading the application id");
    version = db.queryInt("PRAGMA user_version", "reading the schema version");
    tables = db.queryInt("SELECT count(*) FROM sqlite_schema", "counting tables");
  } catch (const SqliteError& e) {
    if (e.code() == SQLITE_CORRUPT && headerApplicationId(db.path()) == kApplicationId)
      throw damagedError(db.path(),
                         fmt::format("reading its schema: {}", sqlite3_errmsg(db.get())));
    if (e.code() == SQLITE_NOTADB || e.code() == SQLITE_CORRUPT)
      throwNotOurs(db.path(), sqlite3_errstr(e.code()));
    if (access == Store::Access::ReadOnly && e.code() == SQLITE_READONLY)
      throw Error(
          "{}\n(reading a WAL store needs {}-wal and {}-shm to exist, or write access to its "
          "directory; any `mesh-host apply` by the store's owner creates them)",
          e.what(), db.path(), db.path());
    throw;
  }

  if (appId == 0 && version == 0 && tables == 0) {
    if (access == Store::Access::ReadOnly)
      throw Error("no state store at {} yet (no cycle has run)", db.path());
  } else if (appId != kApplicationId) {
    throwNotOurs(db.path(), fmt::format("an SQLite database of another program: application_id "
                                        "{:#010x}, {} table(s)",
                                        appId, tables));
  } else if (version > Store::kSchemaVersion) {
    throw Error(
        "state store {} has schema version {}, newer than this mesh-host understands ({}); "
        "upgrade mesh-host",
        db.path(), version, Store::kSchemaVersion);
  } else if (version < 1) {
    // Version 1 is the first, so nothing older carries our id.
    throwNotOurs(db.path(), fmt::format("unknown schema version {}", version));
  }

  if (access == Store::Access::ReadWrite) {
    // WAL: readers (status) never block the writer, and a commit is one append.
    // NORMAL is durable across a process crash; an OS crash may lose the last
    // commits but never corrupts, and the machine is the evidence anyway.
    auto mode = db.queryText("PRAGMA journal_mode = WAL", "switching to WAL");
    if (mode != "wal")
      throw Error("state store {}: cannot use WAL journaling (SQLite kept '{}')", db.path(), mode);
    db.exec("PRAGMA synchronous = NORMAL", "setting synchronous mode");
    // Closing does not checkpoint (unless a Checkpointed write asks it to, see
    // WriteKind): a checkpoint syncs the WAL and the main file, and the next
    // writer then starts the WAL afresh, syncing its header and the directory —
    // four syncs for a no-op cycle that committed only its own row. The WAL stays
    // bounded all the same: a commit that leaves it at 1,000 pages or more
    // (SQLite's wal_autocheckpoint, ~4 MiB) checkpoints it, and the next writer
    // restarts it, truncated to the limit below (the largest transaction's size
    // otherwise).
    if (sqlite3_db_config(db.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr) != SQLITE_OK)
      db.fail(sqlite3_errcode(db.get()), "leaving the checkpoint to later cycles");
    db.queryInt("PRAGMA journal_size_limit = 4194304", "limiting the WAL size");
    // Keep -wal and -shm when the last writer closes. A read-only open (status, run
    // by an operator in the directory's group) then finds them in place instead of
    // having to create them, which it may not be allowed to do and must not do.
    int persist = 1;
    sqlite3_file_control(db.get(), "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
    if (tables == 0) {
      createSchema(db);
    } else {
      addLateSchema(db, version);
      // Migrations from older versions, one step per version, each in its own
      // transaction.
      if (version < 2) migrateToVersion2(db);
      if (version < 3) migrateToVersion3(db);
    }
    switchOnIncrementalVacuum(db);
    version = Store::kSchemaVersion;
  }
  db.exec("PRAGMA foreign_keys = ON", "enabling foreign keys");
  return version;
}

}  // namespace

Error damagedError(const std::string& path, const std::string& detail) {
  return Error(
      "state store {} is damaged ({}); move it aside, with its -wal and -shm files: mesh-host "
      "rebuilds it from the machine on the next apply, restarting nothing",
      path, detail);
}

void Store::Impl::wrote(WriteKind kind) {
  if (kind == WriteKind::Kept) unsyncedKept = true;
  if (kind == WriteKind::Checkpointed) checkpointAtClose = true;
}

bool Store::Impl::syncWal() {
  // The WAL as SQLite holds it open (SQLITE_FCNTL_JOURNAL_POINTER): synced
  // through its VFS, as a Sync::Full commit would. Every frame is in it, so
  // every commit before is durable after.
  sqlite3_file* wal = nullptr;
  if (sqlite3_file_control(db.get(), "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal) != SQLITE_OK ||
      wal == nullptr || wal->pMethods == nullptr)
    return true;  // no WAL opened: nothing was written
  if (wal->pMethods->xSync(wal, SQLITE_SYNC_NORMAL) != SQLITE_OK) return false;
  unsyncedKept = false;
  return true;
}

Store::Impl::~Impl() {
  if (!writable) return;
  // Best effort: a failure here cannot be reported (finishCycle syncs, and
  // reports a failure, for a cycle's own writes).
  if (unsyncedKept) (void)syncWal();
  if (checkpointAtClose) sqlite3_db_config(db.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);
}

void Store::Impl::damaged(const std::string& detail) {
  Error e = damagedError(db.path(), detail);
  if (writable) noteCycleError(stateDir, e.what());
  throw e;
}

void Store::Impl::checkIntegrity() {
  if (checked) return;
  std::vector<std::string> problems;
  // The first few lines say enough; a badly damaged file can produce thousands.
  // A page too damaged to walk fails the check itself: Db::onCorrupt names it.
  Stmt s(db, "PRAGMA quick_check(5)", kQuickCheck);
  auto q = s.start();
  while (q.next()) problems.push_back(q.text(0));
  if (!(problems.size() == 1 && problems[0] == "ok")) {
    std::string detail;
    for (const auto& p : problems) detail += (detail.empty() ? "" : "; ") + p;
    damaged("quick_check: " + detail);
  }
  checked = true;
}

void Store::checkIntegrity() {
  impl_->checkIntegrity();
}

Store Store::open(const std::string& stateDir, Access access) {
  auto open = [&] {
    const std::string path = StateDir{stateDir}.store();
    // NOMUTEX: a Store belongs to one thread, so SQLite's own locking is pure cost.
    int flags = SQLITE_OPEN_NOMUTEX;
    if (access == Access::ReadWrite) {
      // 0750/0640: operators in the directory's group may read status; nothing in it
      // is secret (credentials appear only as keyed digests).
      // What the records say decides what a root cycle writes and removes, and the
      // store, blobs, bundles and logs are opened by path: a state directory another
      // user could swap (a directory or link of theirs on the way) is refused.
      requireTrustedDirectory(absoluteStateDir(stateDir), /*mayBeMissing=*/true);
      makeDirs(stateDir, 0750);
      requireTrustedDirectory(absoluteStateDir(stateDir));
      createDbFile(path);
      // The page a note of why cycles cannot run is written into in place, made
      // now while there is room for it (a stat when it is there).
      prepareErrorPage(stateDir);
      prepareStopPage(stateDir);  // and the one of a cycle stopped on request
      createShmFile(path);
      flags |= SQLITE_OPEN_READWRITE;
    } else {
      if (!lstatPath(path)) throw Error("no state store at {} yet (no cycle has run)", path);
      flags |= SQLITE_OPEN_READONLY;
    }
    const char* vfs = access == Access::ReadOnly && readsWithoutShm(path) ? readerVfs() : nullptr;
    auto impl = std::make_unique<Impl>(path, flags, stateDir, access == Access::ReadWrite, vfs);
    // Another mesh-host (or `status`) may hold the write lock for a moment.
    sqlite3_busy_timeout(impl->db.get(), 10000);
    impl->version = prepare(impl->db, access);
    impl->textsApart = impl->version >= 2;
    // Ours from here on: a damaged page met by any statement is named as such.
    impl->db.onCorrupt([raw = impl.get()](std::string_view purpose, const std::string& why) {
      // quick_check failing to walk a page reads as its findings do.
      raw->damaged(purpose == kQuickCheck ? fmt::format("{}: {}", purpose, why)
                                          : fmt::format("{} failed: {}", purpose, why));
    });
    impl->st.emplace(impl->db);
    return Store(std::move(impl));
  };
  if (access == Access::ReadOnly) return open();
  try {
    return open();
  } catch (const std::exception& e) {
    // A cycle that cannot open its store never starts and leaves no cycle row;
    // this is how `status` learns of it.
    noteCycleError(stateDir, e.what());
    throw;
  }
}

std::optional<Store> Store::openIfExists(const std::string& stateDir, Access access) {
  if (!StateDir{stateDir}.hasStore()) return std::nullopt;
  return open(stateDir, access);
}

}  // namespace mesh::state
