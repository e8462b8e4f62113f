// A store written by the previous schema (tests/e2e/fixtures/store-before-reload,
// whose README says how and by which commit it was made) opens under this build,
// is migrated in place, and restarts nothing.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

const std::string kFixture =
    std::string(MESH_SOURCE_DIR) + "/tests/e2e/fixtures/store-before-reload";
// The root the fixture was made at: the store records it (a process's want holds
// its root and bundle directory), so the node is recreated exactly there.
const std::string kWork = "/tmp/mesh-host-store-fixture";
const std::string kBundle = "05db2d32f17f53e9e849decc8e2a0175f8fc5cb1ee4104a13308f98b75e26b29";

class StoreFixture : public Node {
 protected:
  void SetUp() override {
    fs::remove_all(kWork);
    work = kWork;
    root = work + "/root";
    blobs = work + "/blobs";
    fs::create_directories(root);
    fs::create_directories(blobs + "/sha256");
    fs::copy_file(kFixture + "/bundle.tar", blobs + "/sha256/" + kBundle);
    extraArgs = {"--supervisor", "builtin"};
  }
  void TearDown() override {
    apply(declare("node = \"test\"\nempty = true\n", "empty.toml"));  // stops the service
    Node::TearDown();
  }

  std::string sql(const std::string& query) {
    Result r = runCommand({"sqlite3", "-batch", stateDir() + "/state.db", query});
    EXPECT_EQ(r.code, 0) << r.err;
    while (!r.out.empty() && r.out.back() == '\n') r.out.pop_back();
    return r.out;
  }

  nlohmann::json service() {
    Result st = mesh({"status", "--json"});
    const auto j = st.json();  // held: a range over a temporary's member dangles
    for (const auto& r : j["resources"])
      if (r["id"] == "fx.svc") return r["service"];
    ADD_FAILURE() << "no status for fx.svc: " << st.out << st.err;
    return {};
  }
};

TEST_F(StoreFixture, AStoreOfThePreviousSchemaIsMigratedAndRestartsNothing) {
  std::ifstream in(kFixture + "/decl.toml");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string decl = declare(text);
  // The node as the previous mesh-host left it: the file in place, the service
  // running its bundle. This build puts it there; then the store it wrote gives
  // way to the one the previous version wrote for the very same node.
  Result first = apply(decl);
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  const auto before = service();
  ASSERT_TRUE(before.value("active", false)) << before.dump();
  for (const char* f : {"/state.db", "/state.db-wal", "/state.db-shm"}) fs::remove(stateDir() + f);
  fs::copy_file(kFixture + "/state.db", stateDir() + "/state.db");
  fs::permissions(stateDir() + "/state.db", fs::perms::owner_read | fs::perms::owner_write);
  ASSERT_EQ(sql("SELECT count(*) FROM pragma_table_info('owed_restarts') WHERE name = 'kind'"), "0")
      << "the fixture is not of the previous schema";
  ASSERT_EQ(sql("SELECT count(*) FROM cycles"), "1");
  const std::string recordedWant = sql("SELECT want FROM records WHERE id = 'fx.config'");
  ASSERT_TRUE(recordedWant.starts_with("sha256:")) << recordedWant;

  Result r = apply(decl);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = r.json();
  for (const auto& o : j["outcomes"]) EXPECT_EQ(o["outcome"], "unchanged") << o.dump();
  EXPECT_EQ(j["outcomes"].size(), 2u);
  EXPECT_EQ(j["summary"]["supervisor"]["restart"], 0) << r.out;
  EXPECT_EQ(j["summary"]["supervisor"]["start"], 0) << r.out;
  EXPECT_EQ(j["cycle"], 2) << "the fixture's history goes on";
  const auto after = service();
  EXPECT_EQ(after["pid"], before["pid"]) << after.dump();
  EXPECT_EQ(after["since"], before["since"]) << after.dump();
  // Applied again, the declaration is read compiled (the row that apply kept is
  // read, not written again), each file's want kept in the form: the want the
  // previous mesh-host recorded, so still nothing to do.
  const std::string form = sql("SELECT hex(form) FROM compiled_declaration");
  ASSERT_FALSE(form.empty());
  Result again = apply(decl);
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  const auto aj = again.json();  // held: a range over a temporary's member dangles
  for (const auto& o : aj["outcomes"]) EXPECT_EQ(o["outcome"], "unchanged") << o.dump();
  EXPECT_EQ(aj["outcomes"].size(), 2u);
  EXPECT_EQ(aj["summary"]["supervisor"]["restart"], 0) << again.out;
  EXPECT_EQ(sql("SELECT hex(form) FROM compiled_declaration"), form);
  EXPECT_EQ(sql("SELECT want FROM records WHERE id = 'fx.config'"), recordedWant);
  EXPECT_EQ(service()["pid"], before["pid"]);
  // Migrated in place, to the newest schema (3: each generation keeps its newest cycle,
  // the bounds of its last trim are recorded): the column is there, every row it gained
  // owes a restart.
  EXPECT_EQ(sql("PRAGMA user_version"), "3");
  EXPECT_EQ(sql("SELECT last_cycle FROM generations"), "3") << "the newest cycle that applied it";
  EXPECT_EQ(sql("SELECT count(*) FROM pragma_table_info('owed_restarts') WHERE name = 'kind'"),
            "1");
  EXPECT_EQ(sql("SELECT count(*) FROM owed_restarts"), "0");
  // Version 2: the generation's text moved out of its row, unchanged, and the
  // apply of the same text found its generation (no second one).
  EXPECT_EQ(sql("SELECT count(*) FROM pragma_table_info('generations') WHERE name = 'text'"), "0");
  EXPECT_EQ(sql("SELECT count(*) FROM generations"), "1");
  EXPECT_EQ(sql("SELECT generation || ' ' || length(text) FROM generation_texts"),
            fmt::format("1 {}", text.size()));
  Result gens = mesh({"generations", "--json"});
  ASSERT_EQ(gens.code, 0) << gens.out << gens.err;
  EXPECT_EQ(gens.json()["generations"].size(), 1u) << gens.out;
  // `rollback` applies the migrated text again: what is there already.
  Result back = mesh({"rollback", "1", "--json"});
  ASSERT_EQ(back.code, 0) << back.out << back.err;
  for (const auto& o : back.json()["outcomes"]) EXPECT_EQ(o["outcome"], "unchanged") << o.dump();
  EXPECT_EQ(back.json()["outcomes"].size(), 2u) << back.out;
}

}  // namespace
}  // namespace mesh::e2e
