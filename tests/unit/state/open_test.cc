// Opening a store: creation, WAL, modes, and every way a file can fail to be ours.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <set>

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
  EXPECT_NE(msg.find("has schema version 7, newer than this mesh-host understands (1); upgrade "
                     "mesh-host"),
            std::string::npos)
      << msg;
  // ReadOnly (status) refuses the same way rather than misreading the tables.
  EXPECT_NE(errorOf([&] { Store::open(dir, Store::Access::ReadOnly); }).find("newer"),
            std::string::npos);
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

}  // namespace
}  // namespace mesh::state
