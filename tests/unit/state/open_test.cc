// Opening a store: creation, WAL, modes, and every way a file can fail to be ours.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <vector>

#include "state/records.hh"
#include "state/store.hh"
#include "state_test.hh"
#include "util/error.hh"

namespace mesh::state {
namespace {

using testing::RawDb;
using OpenTest = testing::StateTest;

// Runs f, which must throw mesh::Error, and returns the message.
template <typename F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no mesh::Error thrown";
  return "";
}

Record rec(const std::string& id, const std::string& want = "") {
  Record r;
  r.id = id;
  r.module = "m";
  r.kind = "file";
  r.want = want;
  return r;
}

std::set<std::string> filesIn(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.insert(e.path().filename());
  return out;
}

mode_t modeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST_F(OpenTest, CreatesSchemaInWalModeWithGroupReadableModes) {
  { auto store = Store::open(dir); }
  EXPECT_EQ(modeOf(dir), 0750u);
  EXPECT_EQ(modeOf(db), 0640u);

  RawDb raw(db);
  EXPECT_EQ(raw.text("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw.integer("PRAGMA user_version"), Store::kSchemaVersion);
  EXPECT_EQ(raw.integer("PRAGMA application_id"), 0x4D455348);
  for (const char* table : {"records", "cycles", "history", "generations"}) {
    EXPECT_EQ(
        raw.integer(std::string("SELECT count(*) FROM sqlite_schema WHERE name = '") + table + "'"),
        1)
        << table;
  }
  EXPECT_EQ(raw.integer("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name IN "
                        "('history_by_id', 'history_by_cycle')"),
            2);
}

TEST_F(OpenTest, ReopeningAnExistingStoreKeepsItsData) {
  {
    auto store = Store::open(dir);
    store.putRecord(rec("m.a"));
  }
  auto store = Store::open(dir);
  EXPECT_TRUE(store.record("m.a"));
}

TEST_F(OpenTest, NewerSchemaVersionIsRefusedWithAClearError) {
  { auto store = Store::open(dir); }
  { RawDb(db).exec("PRAGMA user_version = 7"); }
  auto msg = errorOf([&] { Store::open(dir); });
  EXPECT_NE(msg.find(db), std::string::npos) << msg;
  EXPECT_NE(msg.find(fmt::format("has schema version 7, newer than this mesh-host understands "
                                 "({}); upgrade mesh-host",
                                 Store::kSchemaVersion)),
            std::string::npos)
      << msg;
  // ReadOnly (status) refuses the same way rather than misreading the tables.
  EXPECT_NE(errorOf([&] { Store::open(dir, Store::Access::ReadOnly); }).find("newer"),
            std::string::npos);
}

// A store of schema version 1: the generations' texts in their rows (that
// version's `generations`, to the letter), two generations.
void makeVersion1Store(const std::string& dir, const std::string& db) {
  { auto store = Store::open(dir); }
  RawDb raw(db);
  raw.exec(
      "DROP TABLE generations; DROP TABLE generation_texts;"
      "CREATE TABLE generations (generation INTEGER PRIMARY KEY, digest TEXT NOT NULL UNIQUE, "
      "text TEXT NOT NULL, first_applied_at INTEGER NOT NULL, last_applied_at INTEGER NOT NULL, "
      "source TEXT NOT NULL DEFAULT '', base_dir TEXT NOT NULL DEFAULT '', serial INTEGER);"
      "INSERT INTO generations VALUES (1, 'sha256:aa', 'node = \"a\"', 10, 20, '/etc/a.toml', "
      "'/etc', NULL);"
      "INSERT INTO generations VALUES (2, 'sha256:bb', 'node = \"b\"', 30, 40, 'b.toml', '/srv', "
      "7);"
      "PRAGMA user_version = 1");
}

TEST_F(OpenTest, MigratesAVersion1StoreKeepingEveryGenerationsText) {
  makeVersion1Store(dir, db);
  {
    auto store = Store::open(dir);
    EXPECT_EQ(store.generationText(1), "node = \"a\"");
    const auto g = store.generationDeclaration(2);
    ASSERT_TRUE(g);
    EXPECT_EQ(g->text, "node = \"b\"");
    EXPECT_EQ(g->source, "b.toml");
    EXPECT_EQ(g->baseDir, "/srv");
    const auto gens = store.generations();
    ASSERT_EQ(gens.size(), 2u);
    EXPECT_EQ(gens[1].digest, "sha256:bb");
    EXPECT_EQ(gens[1].firstAppliedAt, 30);
    EXPECT_EQ(store.highestSerial()->serial, 7);
    // Numbering goes on after the migrated rows; a known text keeps its number.
    EXPECT_EQ(store.recordGeneration("sha256:bb", "unused", 50), 2);
    EXPECT_EQ(store.recordGeneration("sha256:cc", "node = \"c\"", 60), 3);
    EXPECT_EQ(store.generationText(3), "node = \"c\"");
  }
  RawDb raw(db);
  EXPECT_EQ(raw.integer("PRAGMA user_version"), Store::kSchemaVersion);  // through 2, to the newest
  EXPECT_EQ(raw.integer("SELECT count(*) FROM pragma_table_info('generations') WHERE name = "
                        "'text'"),
            0);
  EXPECT_EQ(raw.rows("SELECT generation || ':' || text FROM generation_texts ORDER BY 1", 0),
            "1:node = \"a\" | 2:node = \"b\" | 3:node = \"c\"");
  EXPECT_EQ(raw.text("PRAGMA integrity_check"), "ok");
}

// `status`, `generations` and `gc` open read-only: a version-1 store is read as it
// is (migrating is a write), until the next apply migrates it.
TEST_F(OpenTest, ReadOnlyOpenOfAVersion1StoreReadsItsTextsUnmigrated) {
  makeVersion1Store(dir, db);
  {
    auto ro = Store::open(dir, Store::Access::ReadOnly);
    EXPECT_EQ(ro.generationText(1), "node = \"a\"");
    ASSERT_TRUE(ro.generationDeclaration(2));
    EXPECT_EQ(ro.generationDeclaration(2)->text, "node = \"b\"");
    EXPECT_EQ(ro.generations().size(), 2u);
  }
  EXPECT_EQ(RawDb(db).integer("PRAGMA user_version"), 1);
}

// Every apply updates its generation's row; the text is not in it, so the update
// does not rewrite a copy of the text (the text's pages stay as written).
TEST_F(OpenTest, UpdatingAKnownGenerationLeavesItsTextUntouched) {
  const std::string big(200000, 'x');
  {
    auto store = Store::open(dir);
    ASSERT_EQ(store.recordGeneration("sha256:aa", big, 1), 1);
  }
  const auto pagesOfTexts = [&] {
    return RawDb(db).integer("SELECT count(*) FROM dbstat WHERE name = 'generation_texts'");
  };
  const int64_t textPages = pagesOfTexts();
  EXPECT_GT(textPages, 40) << "the text is in its own table";
  {
    auto store = Store::open(dir);
    for (int i = 2; i < 5; ++i) EXPECT_EQ(store.recordGeneration("sha256:aa", big, i), 1);
  }
  RawDb raw(db);
  EXPECT_LT(raw.integer("SELECT sum(pgsize) FROM dbstat WHERE name = 'generations'"), 16384);
  EXPECT_EQ(pagesOfTexts(), textPages);
  EXPECT_EQ(raw.integer("SELECT last_applied_at FROM generations"), 4);
}

TEST_F(OpenTest, GarbageFileIsNotAStore) {
  std::filesystem::create_directories(dir);
  std::ofstream(db) << std::string(4096, 'x') << "definitely not sqlite";
  auto msg = errorOf([&] { Store::open(dir); });
  EXPECT_NE(msg.find(db), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a mesh-host state store"), std::string::npos) << msg;
  EXPECT_NE(msg.find("move it aside to start afresh"), std::string::npos) << msg;
}

TEST_F(OpenTest, ShortGarbageFileIsNotAStore) {
  std::filesystem::create_directories(dir);
  std::ofstream(db) << "hello";
  auto msg = errorOf([&] { Store::open(dir); });
  EXPECT_NE(msg.find("not a mesh-host state store"), std::string::npos) << msg;
}

TEST_F(OpenTest, ForeignSqliteDatabaseIsNotAStore) {
  std::filesystem::create_directories(dir);
  {
    RawDb raw(db);
    raw.exec("PRAGMA application_id = 1234; CREATE TABLE photos (id INTEGER PRIMARY KEY)");
  }
  auto msg = errorOf([&] { Store::open(dir); });
  EXPECT_NE(msg.find(db), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a mesh-host state store"), std::string::npos) << msg;
  EXPECT_NE(msg.find("another program"), std::string::npos) << msg;
  // Nothing of ours was added to it.
  RawDb raw(db);
  EXPECT_EQ(raw.integer("SELECT count(*) FROM sqlite_schema"), 1);
}

TEST_F(OpenTest, ForeignSqliteDatabaseWithoutApplicationIdIsNotAStore) {
  std::filesystem::create_directories(dir);
  { RawDb(db).exec("CREATE TABLE records (x)"); }
  auto msg = errorOf([&] { Store::open(dir); });
  EXPECT_NE(msg.find("not a mesh-host state store"), std::string::npos) << msg;
}

TEST_F(OpenTest, EmptyFileBecomesAStore) {
  // What a crash between creating the file and committing the schema leaves behind.
  std::filesystem::create_directories(dir);
  std::ofstream{db};
  auto store = Store::open(dir);
  EXPECT_EQ(store.cycleCount(), 0);
}

TEST_F(OpenTest, ReadOnlyOpenOfMissingStoreSaysNoCycleHasRun) {
  auto msg = errorOf([&] { Store::open(dir, Store::Access::ReadOnly); });
  EXPECT_NE(msg.find("no state store at " + db + " yet (no cycle has run)"), std::string::npos)
      << msg;
  EXPECT_FALSE(std::filesystem::exists(dir)) << "ReadOnly must create nothing";
}

TEST_F(OpenTest, ReadOnlyCanReadButNotWrite) {
  {
    auto store = Store::open(dir);
    store.putRecord(rec("m.a", "sha256:aa"));
  }
  auto before = filesIn(dir);
  auto ro = Store::open(dir, Store::Access::ReadOnly);
  ASSERT_TRUE(ro.record("m.a"));
  EXPECT_EQ(filesIn(dir), before) << "the writer keeps -wal and -shm, so a reader creates nothing";
  EXPECT_EQ(ro.record("m.a")->want, "sha256:aa");
  EXPECT_EQ(ro.loadRecords().size(), 1u);

  auto msg = errorOf([&] { ro.putRecord(rec("m.b")); });
  EXPECT_NE(msg.find("saving a resource record"), std::string::npos) << msg;
  EXPECT_NE(msg.find("readonly"), std::string::npos) << msg;
  EXPECT_THROW(ro.beginCycle(1, 0), Error);
  EXPECT_FALSE(ro.record("m.b"));
}

TEST_F(OpenTest, ReadOnlySeesWritesOfAConcurrentWriter) {
  auto rw = Store::open(dir);
  auto ro = Store::open(dir, Store::Access::ReadOnly);
  rw.putRecord(rec("m.a"));
  EXPECT_TRUE(ro.record("m.a"));
}

TEST_F(OpenTest, UnopenableStateDirNamesThePath) {
  std::filesystem::create_directories(dir);
  std::filesystem::create_directory(db);  // a directory where the file should be
  auto msg = errorOf([&] { Store::open(dir); });
  EXPECT_NE(msg.find(db), std::string::npos) << msg;
}

// A store as 10,000 `file` resources leave it: a record each, and a history
// entry each from the cycle that created them.
void fillTenThousand(const std::string& dir) {
  auto store = Store::open(dir);
  Store::Txn txn(store);
  const int64_t cycle = store.beginCycle(1, 0);
  for (int i = 0; i < 10000; ++i) {
    Record r = rec(fmt::format("m.f{}", i), "sha256:" + std::string(64, 'a'));
    r.path = fmt::format("/srv/files/d{}/f{}", i / 100, i);
    r.wrote = r.want;
    r.outcome = "created";
    r.reason = "new";
    r.detail = "10 bytes, mode 0644";
    r.observed = "dev 2049 ino 1234567 size 10 mtime 1700000000123456789 ctime …";
    store.putRecord(r);
    store.addHistory({cycle, r.id, "created", "new", r.want, r.wrote, 1});
  }
  txn.commit();
}

// Checkpoints the closed store's WAL into its file and empties it: closing the
// store leaves its last commits in the WAL, where the next open would read them
// rather than a page damaged in the file.
void checkpointIntoTheFile(const std::string& db) {
  RawDb raw(db, SQLITE_OPEN_READWRITE);
  EXPECT_EQ(raw.text("PRAGMA wal_checkpoint(TRUNCATE)"), "0");
}

// Overwrites one leaf page of `table` with garbage, behind SQLite's back (the
// store is closed and its WAL checkpointed into the file).
void damagePageOf(const std::string& db, const std::string& table) {
  checkpointIntoTheFile(db);
  int64_t page = 0, size = 0;
  {
    RawDb raw(db, SQLITE_OPEN_READONLY);
    size = raw.integer("PRAGMA page_size");
    page = raw.integer("SELECT pageno FROM dbstat WHERE name = '" + table +
                       "' AND pagetype = 'leaf' ORDER BY pageno LIMIT 1 OFFSET 3");
  }
  std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp((page - 1) * size);
  std::string garbage(static_cast<size_t>(size), '\0');
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>((i * 7919 + 13) % 251);
  f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  ASSERT_TRUE(f.good());
}

void expectDamagedMessage(const std::string& msg, const std::string& db) {
  EXPECT_NE(msg.find("state store " + db + " is damaged ("), std::string::npos) << msg;
  EXPECT_NE(msg.find("move it aside, with its -wal and -shm files: mesh-host rebuilds it from "
                     "the machine on the next apply, restarting nothing"),
            std::string::npos)
      << msg;
}

// quick_check's cost decides where it runs (docs/state-store.md): measured here.
TEST_F(OpenTest, QuickCheckOfTenThousandRecordsIsMeasured) {
  fillTenThousand(dir);
  std::vector<double> ms;
  for (int i = 0; i < 5; ++i) {
    auto store = Store::open(dir);
    const auto start = std::chrono::steady_clock::now();
    store.checkIntegrity();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  RecordProperty("quick_check_ms_median", fmt::format("{:.1f}", ms[2]));
  std::printf("quick_check of 10,000 records (%lld bytes): median %.1f ms, min %.1f ms\n",
              static_cast<long long>(std::filesystem::file_size(db)), ms[2], ms[0]);
  EXPECT_LT(ms[0], 500.0) << "far slower than measured (5-10 ms)";
}

// A damaged page where a no-op cycle never looks (history) is found before the
// first write of a cycle's outcomes, with what to do; and it is noted for status.
TEST_F(OpenTest, DamagedPageIsFoundBeforeTheFirstWrite) {
  fillTenThousand(dir);
  damagePageOf(db, "history");
  auto store = Store::open(dir);  // opening stays cheap: no check yet
  EXPECT_EQ(store.loadRecords().size(), 10000u);
  auto msg = errorOf([&] { store.putRecord(rec("m.new")); });
  expectDamagedMessage(msg, db);
  EXPECT_NE(msg.find("(quick_check: "), std::string::npos) << msg;
  auto noted = lastCycleError(dir);
  ASSERT_TRUE(noted) << "not noted in last-error";
  EXPECT_EQ(noted->message, msg);
  EXPECT_GT(noted->at, 0);
  EXPECT_FALSE(Store::open(dir).record("m.new"));
}

// A damaged page of the records, which every cycle reads, fails the cycle at once.
TEST_F(OpenTest, DamagedRecordsPageFailsLoadingThem) {
  fillTenThousand(dir);
  damagePageOf(db, "records");
  auto store = Store::open(dir);
  auto msg = errorOf([&] { store.loadRecords(); });
  expectDamagedMessage(msg, db);
  EXPECT_TRUE(lastCycleError(dir));
}

// The same for the compact set a cycle loads them as.
TEST_F(OpenTest, DamagedRecordsPageFailsLoadingTheCompactSet) {
  fillTenThousand(dir);
  damagePageOf(db, "records");
  auto store = Store::open(dir);
  auto msg = errorOf([&] { store.loadRecordSet(); });
  expectDamagedMessage(msg, db);
  EXPECT_TRUE(lastCycleError(dir));
}

// Regression (found by the fault simulation): a damaged page of the cycles
// table, which every cycle reads and writes but never checks, failed the cycle
// with a bare "database disk image is malformed", noted nowhere. Every statement
// that meets a damaged page now names the store damaged, says what to do, and
// notes it for status.
TEST_F(OpenTest, DamagedCyclesPageIsNamedDamagedAndNoted) {
  {
    auto store = Store::open(dir);
    for (int i = 0; i < 3000; ++i) store.beginCycle(i, 0);
  }
  checkpointIntoTheFile(db);
  int64_t page = 0, size = 0;
  {
    RawDb raw(db, SQLITE_OPEN_READONLY);
    size = raw.integer("PRAGMA page_size");
    // The root: on the way to every row, the last one and a new one included.
    page = raw.integer("SELECT rootpage FROM sqlite_schema WHERE name = 'cycles'");
  }
  {
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp((page - 1) * size);
    const std::string garbage(static_cast<size_t>(size), '\x5a');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
    ASSERT_TRUE(f.good());
  }
  auto store = Store::open(dir);
  EXPECT_EQ(store.loadRecords().size(), 0u);
  auto msg = errorOf([&] { store.lastCycle(); });
  expectDamagedMessage(msg, db);
  auto noted = lastCycleError(dir);
  ASSERT_TRUE(noted) << "not noted in last-error";
  EXPECT_EQ(noted->message, msg);
  expectDamagedMessage(errorOf([&] { store.beginCycle(5000, 0); }), db);
  // A reader is told the same, and notes nothing.
  clearCycleError(dir);
  auto reader = Store::open(dir, Store::Access::ReadOnly);
  expectDamagedMessage(errorOf([&] { reader.cycles(0); }), db);
  EXPECT_FALSE(lastCycleError(dir));
}

TEST_F(OpenTest, HealthyStorePassesTheCheck) {
  fillTenThousand(dir);
  auto store = Store::open(dir);
  store.checkIntegrity();
  store.putRecord(rec("m.new"));
  EXPECT_FALSE(lastCycleError(dir));
}

// A writer's failed open is noted (no cycle row can say it); a finished cycle
// clears the note; a reader notes nothing.
TEST_F(OpenTest, FailedOpenIsNotedUntilACycleFinishes) {
  std::filesystem::create_directories(dir);
  std::ofstream(db) << std::string(4096, 'x');
  EXPECT_NE(errorOf([&] { Store::open(dir, Store::Access::ReadOnly); }).find("not a mesh-host"),
            std::string::npos);
  EXPECT_FALSE(lastCycleError(dir)) << "a reader noted an error";
  auto msg = errorOf([&] { Store::open(dir); });
  auto noted = lastCycleError(dir);
  ASSERT_TRUE(noted);
  EXPECT_EQ(noted->message, msg);
  // Written in place into the page kept for it (a full disk cannot silence it).
  EXPECT_EQ(modeOf(dir + "/last-error.page"), 0640u);
  EXPECT_FALSE(std::filesystem::exists(dir + "/last-error"));

  std::filesystem::remove(db);  // moved aside
  auto store = Store::open(dir);
  EXPECT_TRUE(lastCycleError(dir)) << "cleared before any cycle ran";
  Cycle c;
  c.cycle = store.beginCycle(1, 0);
  c.finishedAt = 2;
  store.finishCycle(c);
  EXPECT_FALSE(lastCycleError(dir));
  EXPECT_FALSE(std::filesystem::exists(dir + "/last-error"));
  EXPECT_EQ(std::filesystem::file_size(dir + "/last-error.page"), 4096u) << "the page stays";
}

// A note that cannot have its page (none made, and none can be) goes to
// last-error, atomically; the newer of the two is the one shown.
TEST_F(OpenTest, ACycleErrorWithoutItsPageGoesToLastError) {
  std::filesystem::create_directories(dir);
  std::filesystem::create_directory(dir + "/last-error.page");  // in the way: no page
  noteCycleError(dir, "first");
  ASSERT_TRUE(lastCycleError(dir));
  EXPECT_EQ(lastCycleError(dir)->message, "first");
  EXPECT_TRUE(std::filesystem::exists(dir + "/last-error"));
  std::filesystem::remove(dir + "/last-error.page");
  prepareErrorPage(dir);
  noteCycleError(dir, "second");
  EXPECT_EQ(lastCycleError(dir)->message, "second");
  EXPECT_FALSE(std::filesystem::exists(dir + "/last-error")) << "the older note goes";
}

}  // namespace
}  // namespace mesh::state
