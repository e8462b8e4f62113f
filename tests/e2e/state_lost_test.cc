// Losing the state store must never cost a rewrite: the machine is the evidence.
#include <filesystem>
#include <fstream>
#include <string>

#include "every_kind.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

class StateLost : public EveryKind {};

TEST_F(StateLost, DeletedStoreWritesNothingAndRebuildsRecords) {
  ASSERT_EQ(apply(declPath).code, 0);
  auto before = snapshotTree(root, {"var"});
  for (const char* f : {"state.db", "state.db-wal", "state.db-shm"})
    fs::remove(stateDir() + "/" + f);

  Result r = apply(declPath);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto j = r.json();
  for (const char* id : kIds) {
    auto o = outcomeOf(j, id);
    EXPECT_EQ(o["outcome"], "unchanged") << o.dump();
    EXPECT_EQ(o["reason"], "adopted") << o.dump();
    EXPECT_TRUE(o["wrote"].get<std::string>().starts_with("sha256:"));
  }
  // Inode and mtime of every managed path are as before: nothing was written.
  EXPECT_EQ(snapshotTree(root, {"var"}), before);

  Result st = mesh({"status", "--json"});
  ASSERT_EQ(st.code, 0) << st.err;
  EXPECT_EQ(st.json()["resources"].size(), 5u);
  Result again = apply(declPath);
  for (const char* id : kIds) EXPECT_EQ(outcomeOf(again.json(), id)["reason"], "");
}

TEST_F(StateLost, CorruptStoreIsAClearError) {
  ASSERT_EQ(apply(declPath).code, 0);
  for (const char* f : {"state.db-wal", "state.db-shm"}) fs::remove(stateDir() + "/" + f);
  std::ofstream(stateDir() + "/state.db", std::ios::trunc) << "this is not a database at all";
  auto before = snapshotTree(root, {"var"});
  Result r = apply(declPath);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("state.db"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("move it aside"), std::string::npos) << r.err;
  EXPECT_EQ(snapshotTree(root, {"var"}), before);
}

// A store grown to 10,000 records, then one leaf page of `table` overwritten with
// garbage behind SQLite's back, as a failing disk would.
class DamagedStore : public EveryKind {
 protected:
  void SetUp() override {
    EveryKind::SetUp();
    ASSERT_EQ(apply(declPath).code, 0);
    // Resources of a module the declaration has since dropped would be pruned;
    // they are never, because every cycle here fails first (or the store is gone).
    sql("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000) "
        "INSERT INTO records (id, module, kind, path, want, wrote, outcome, reason, detail, "
        "changed_at, changed_cycle, changes, observed) SELECT 'old.f' || i, 'old', 'file', "
        "'/srv/old/f' || i, 'sha256:' || lower(hex(randomblob(32))), '', 'created', 'new', "
        "'10 bytes, mode 0644', 0, 1, 1, '' FROM n");
    sql("INSERT INTO history (cycle, id, outcome, reason, want, wrote, at) SELECT 1, id, "
        "'created', 'new', want, wrote, 0 FROM records");
  }

  std::string sql(const std::string& statement) {
    Result r = runCommand({"sqlite3", "-batch", db(), statement});
    EXPECT_EQ(r.code, 0) << statement << ": " << r.err;
    return r.out;
  }
  std::string db() const { return stateDir() + "/state.db"; }

  void damage(const std::string& table) {
    const long size = std::stol(sql("PRAGMA page_size"));
    const long page = std::stol(sql("SELECT pageno FROM dbstat WHERE name = '" + table +
                                    "' AND pagetype = 'leaf' ORDER BY pageno LIMIT 1 OFFSET 3"));
    std::fstream f(db(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp((page - 1) * size);
    std::string garbage(static_cast<size_t>(size), '\0');
    for (size_t i = 0; i < garbage.size(); ++i)
      garbage[i] = static_cast<char>((i * 7919 + 13) % 251);
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
    ASSERT_TRUE(f.good());
  }

  // What apply said, as status must show it.
  void expectStatusShows(const std::string& applyErr) {
    Result st = mesh({"status"});
    EXPECT_EQ(st.code, 1) << st.out << st.err;
    EXPECT_NE(st.out.find("error: the last cycle could not run ("), std::string::npos) << st.out;
    EXPECT_NE(st.out.find(db() + " is damaged ("), std::string::npos) << st.out;
    const std::string message = applyErr.substr(applyErr.find("state store "));
    EXPECT_NE(st.out.find(message.substr(0, message.find('\n'))), std::string::npos)
        << "status: " << st.out << "\napply: " << applyErr;
    Result js = mesh({"status", "--json"});
    EXPECT_EQ(js.code, 1) << js.out << js.err;
    auto j = js.json();
    ASSERT_TRUE(j["last_error"].is_object()) << js.out;
    EXPECT_NE(j["last_error"]["message"].get<std::string>().find("is damaged"), std::string::npos);
  }

  void expectDamagedError(const Result& r) {
    EXPECT_EQ(r.code, 1) << "not a clean failure: " << r.out << r.err;
    EXPECT_NE(r.err.find("mesh-host: state store " + db() + " is damaged ("), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("); move it aside, with its -wal and -shm files: mesh-host rebuilds it "
                         "from the machine on the next apply, restarting nothing"),
              std::string::npos)
        << r.err;
  }
};

// The records, which every cycle reads whole: the apply fails at once, touching
// nothing, and status fails too, saying why and what to do.
TEST_F(DamagedStore, ADamagedRecordsPageFailsTheApplyAndShowsInStatus) {
  damage("records");
  auto before = snapshotTree(root, {"var"});
  Result r = apply(declPath);
  expectDamagedError(r);
  EXPECT_EQ(snapshotTree(root, {"var"}), before);
  expectStatusShows(r.err);

  // Moved aside as the message says: the next apply adopts everything, restarts
  // nothing, and status is healthy again.
  for (const char* f : {"state.db", "state.db-wal", "state.db-shm"})
    if (fs::exists(stateDir() + "/" + f))
      fs::rename(stateDir() + "/" + f, work + "/" + f + ".damaged");
  Result next = apply(declPath);
  ASSERT_EQ(next.code, 0) << next.out << next.err;
  for (const char* id : kIds) EXPECT_EQ(outcomeOf(next.json(), id)["reason"], "adopted") << id;
  EXPECT_EQ(snapshotTree(root, {"var"}), before);
  Result st = mesh({"status", "--json"});
  EXPECT_EQ(st.code, 0) << st.out << st.err;
  EXPECT_TRUE(st.json()["last_error"].is_null()) << st.out;
  EXPECT_FALSE(fs::exists(stateDir() + "/last-error"));
}

// A page no read of a cycle touches (history) is found by quick_check before the
// cycle writes its first outcome.
TEST_F(DamagedStore, ADamagedHistoryPageFailsTheFirstWrite) {
  damage("history");
  Result r = apply(declare(text("listen = 2\n"), "changed.toml"));
  expectDamagedError(r);
  EXPECT_NE(r.err.find("is damaged (quick_check: "), std::string::npos) << r.err;
  expectStatusShows(r.err);
}

// Regression (found by the fault simulation): quick_check ran before the first
// write of an outcome, which comes after its change, so the cycle rewrote the
// changed file and only then failed. It now runs before a cycle's first change.
TEST_F(DamagedStore, ADamagedHistoryPageFailsTheCycleBeforeItChangesAnything) {
  damage("history");
  auto before = snapshotTree(root, {"var"});
  Result r = apply(declare(text("listen = 2\n"), "changed.toml"));
  expectDamagedError(r);
  EXPECT_EQ(snapshotTree(root, {"var"}), before) << "the damaged store's cycle changed the tree";
}

}  // namespace
}  // namespace mesh::e2e
