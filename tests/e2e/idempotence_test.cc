// The bug this project was born from: an unchanged outcome that forgot its
// digest, so the next cycle re-created the resource.
#include "every_kind.hh"

namespace mesh::e2e {
namespace {

class Idempotence : public EveryKind {};

TEST_F(Idempotence, FirstCreatesThenUnchangedTwiceAndRecordsKeepTheirDigest) {
  Result first = apply(declPath);
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  auto j = first.json();
  std::map<std::string, std::string> wrote;
  for (const char* id : kIds) {
    auto o = outcomeOf(j, id);
    EXPECT_EQ(o["outcome"], "created") << id << ": " << o.dump();
    ASSERT_TRUE(o["wrote"].get<std::string>().starts_with("sha256:")) << o.dump();
    wrote[id] = o["wrote"];
  }
  EXPECT_EQ(j["summary"]["created"], 5);

  for (int round = 2; round <= 3; ++round) {
    Result again = apply(declPath);
    ASSERT_EQ(again.code, 0) << again.out << again.err;
    auto k = again.json();
    for (const char* id : kIds) {
      auto o = outcomeOf(k, id);
      EXPECT_EQ(o["outcome"], "unchanged") << "round " << round << " " << id << ": " << o.dump();
      EXPECT_EQ(o["wrote"], wrote[id]) << "round " << round << " " << id;
    }
    EXPECT_EQ(k["summary"]["unchanged"], 5);
    EXPECT_EQ(k["cycle"], round);

    // The record, as status reads it from the store, still holds the digest.
    Result st = mesh({"status", "--json"});
    ASSERT_EQ(st.code, 0) << st.out << st.err;
    auto s = st.json();
    ASSERT_EQ(s["resources"].size(), 5u);
    for (const auto& r : s["resources"]) {
      EXPECT_EQ(r["wrote"], wrote[r["id"]]) << r.dump();
      EXPECT_EQ(r["outcome"], "unchanged") << r.dump();
      EXPECT_EQ(r["changes"], 1) << r.dump();
    }
  }
}

TEST_F(Idempotence, UnchangedApplyTouchesNothing) {
  ASSERT_EQ(apply(declPath).code, 0);
  auto before = snapshotTree(root, {"var"});
  Result again = apply(declPath);
  ASSERT_EQ(again.code, 0);
  EXPECT_EQ(snapshotTree(root, {"var"}), before);
}

TEST_F(Idempotence, HumanOutputFollowsTheContract) {
  Result first = apply(declPath, /*json=*/false);
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_NE(first.out.find("created m.config (m): "), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("created m.app (m): 2 file(s)"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("cycle 1: 5 created, 0 updated, 0 unchanged, 0 removed, 0 failed in "),
            std::string::npos)
      << first.out;
  Result again = mesh({"apply", declPath, "-v"});
  EXPECT_NE(again.out.find("unchanged m.config (m)\n"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("cycle 2: 0 created, 0 updated, 5 unchanged, 0 removed, 0 failed"),
            std::string::npos)
      << again.out;
}

// A no-op apply syncs nothing: it commits only its own cycle row and the
// generation's times, which need not be durable (docs/state-store.md), and the
// store neither checkpoints when it closes nor starts its WAL afresh when it
// opens. Before, every no-op apply called fdatasync four times.
TEST_F(Idempotence, ANoOpApplySyncsNothing) {
  if (runCommand({"strace", "-V"}).code != 0) GTEST_SKIP() << "strace is not installed";
  ASSERT_EQ(apply(declPath).code, 0);
  ASSERT_EQ(apply(declPath).code, 0);  // the first no-op: it may still settle what it observed
  const std::string trace = work + "/syncs.trace";
  Result r =
      runCommand({"strace", "-f", "-qq", "-o", trace, "-e",
                  "trace=fsync,fdatasync,syncfs,sync,sync_file_range,msync", MESH_HOST_BIN, "apply",
                  declPath, "--json", "--root", root, "--blobs", blobs, "--node", "test"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.json()["summary"]["unchanged"], 5) << r.out;
  std::ifstream in(trace);
  std::string line, syncs;
  while (std::getline(in, line))
    if (line.find("sync") != std::string::npos) syncs += line + "\n";
  EXPECT_EQ(syncs, "") << "a no-op apply synced";
}

}  // namespace
}  // namespace mesh::e2e
