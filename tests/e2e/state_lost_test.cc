// Losing the state store must never cost a rewrite: the machine is the evidence.
#include <filesystem>

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

}  // namespace
}  // namespace mesh::e2e
