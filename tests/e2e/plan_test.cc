// plan is apply with the gate closed: it shows what would change, with a diff,
// writes nothing, and never shows a credential's content.
#include <fstream>

#include "every_kind.hh"

namespace mesh::e2e {
namespace {

class Plan : public EveryKind {};

TEST_F(Plan, OnAFreshNodeShowsEverythingAndWritesNothing) {
  auto before = snapshotTree(root);
  Result r = plan(declPath);
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("would create m.config (m)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("+listen = 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("plan: 5 to create"), std::string::npos) << r.out;
  EXPECT_EQ(snapshotTree(root), before);  // not even a state dir
}

TEST_F(Plan, ShowsAUnifiedDiffAndExitsZeroWhenNothingToDo) {
  ASSERT_EQ(apply(declPath).code, 0);
  Result none = plan(declPath);
  EXPECT_EQ(none.code, 0) << none.out << none.err;
  EXPECT_NE(none.out.find("plan: 0 to create, 0 to update, 5 unchanged"), std::string::npos)
      << none.out;

  auto changed = declare(text("listen = 2\n"), "changed.toml");
  // The store's WAL index may be touched by a reader; the managed tree may not.
  auto before = snapshotTree(root, {"var"});
  Result r = plan(changed);
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("would update m.config (m): 11 bytes, mode 0644: declared"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("--- a/etc/m/config"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-listen = 1\n+listen = 2\n"), std::string::npos) << r.out;
  EXPECT_EQ(snapshotTree(root, {"var"}), before);
}

TEST_F(Plan, NeverPrintsTheCredential) {
  ASSERT_EQ(apply(declPath).code, 0);
  std::ofstream(secretFile, std::ios::trunc) << "new-secret-value-99";
  for (bool json : {false, true}) {
    Result r = plan(declPath, json);
    EXPECT_EQ(r.code, 3) << r.out << r.err;
    EXPECT_EQ(r.out.find("new-secret-value-99"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find(kSecret), std::string::npos) << r.out;
    EXPECT_EQ(r.err.find("new-secret-value-99"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("(secret changed)"), std::string::npos) << r.out;
  }
  Result applied = mesh({"apply", declPath, "-v"});
  EXPECT_EQ(applied.out.find("new-secret-value-99"), std::string::npos);
  EXPECT_NE(applied.out.find("updated m.key (m): secret, mode 0600: declared"), std::string::npos)
      << applied.out;
  // Nor is it in the state store in clear.
  Result dump = runCommand({"sqlite3", stateDir() + "/state.db", ".dump"});
  ASSERT_EQ(dump.code, 0) << dump.err;
  EXPECT_EQ(dump.out.find("new-secret-value-99"), std::string::npos);
  EXPECT_EQ(dump.out.find(kSecret), std::string::npos);
}

TEST_F(Plan, ShowsNoContentOfAFileOnlyItsOwnerMayRead) {
  const auto d = [&](const std::string& content) {
    return declare(fmt::format("[module.p.file.private]\npath = \"/etc/p/private\"\n"
                               "content = \"{}\"\nmode = \"0600\"\n",
                               content),
                   "private.toml");
  };
  ASSERT_EQ(apply(d("token = old-private-bytes\\n")).code, 0);
  for (bool json : {false, true}) {
    Result r = plan(d("token = new-private-bytes\\n"), json);
    EXPECT_EQ(r.code, 3) << r.out << r.err;
    EXPECT_EQ(r.out.find("old-private-bytes"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("new-private-bytes"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("content of a 0600 file changed; diff not shown"), std::string::npos)
        << r.out;
  }
}

TEST_F(Plan, ShowsNoContentOfAPathThatHeldACredential) {
  ASSERT_EQ(apply(declPath).code, 0);  // m.key: a credential at /etc/m/key
  // The credential goes; a world-readable file takes its path.
  const auto d =
      declare("[module.m.file.notsecret]\npath = \"/etc/m/key\"\ncontent = \"public\\n\"\n",
              "replaced.toml");
  Result r = plan(d);
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_EQ(r.out.find(kSecret), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("+public"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("diff not shown"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace mesh::e2e
