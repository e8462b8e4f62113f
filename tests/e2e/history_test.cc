// `history` lists outcomes cycle by cycle; `status` and `history` work for an
// operator who is not root but reads the state dir through a group, and neither
// ever shows a credential.
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "every_kind.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

class History : public EveryKind {
 protected:
  void SetUp() override {
    EveryKind::SetUp();
    ASSERT_EQ(apply(declPath).code, 0);      // cycle 1: all created
    write("/etc/m/config", "listen = 2\n");  // drift
    ASSERT_EQ(apply(declPath).code, 0);      // cycle 2: m.config updated
    ASSERT_EQ(apply(declare(text("listen = 3\n"), "decl3.toml")).code, 0);  // cycle 3
    ASSERT_EQ(apply(declPath).code, 0);  // cycle 4: back to listen = 1
  }
};

TEST_F(History, CycleByCycleNewestFirst) {
  Result r = mesh({"history"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto c4 = r.out.find("cycle 4 at "), c3 = r.out.find("cycle 3 at "),
             c2 = r.out.find("cycle 2 at "), c1 = r.out.find("cycle 1 at ");
  ASSERT_NE(c1, std::string::npos) << r.out;
  EXPECT_LT(c4, c3);
  EXPECT_LT(c3, c2);
  EXPECT_LT(c2, c1);
  EXPECT_NE(r.out.find("  updated m.config: drift: content changed → sha256:"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  updated m.config: declared → sha256:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  created m.key: new → sha256:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 created, 1 updated, 4 unchanged, 0 removed, 0 failed"), std::string::npos)
      << r.out;
}

TEST_F(History, OneResourceWithLimit) {
  Result r = mesh({"history", "m.config", "--limit", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("cycle 4 at "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cycle 3 at "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("cycle 2 at "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("m.key"), std::string::npos) << r.out;

  Result none = mesh({"history", "m.current"});  // only created, in cycle 1
  EXPECT_NE(none.out.find("cycle 1 at "), std::string::npos) << none.out;
  EXPECT_EQ(none.out.find("cycle 2 at "), std::string::npos) << none.out;
}

TEST_F(History, Json) {
  Result r = mesh({"history", "--json", "--limit", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = r.json();
  ASSERT_EQ(j["cycles"].size(), 3u) << r.out;
  EXPECT_EQ(j["cycles"][0]["cycle"], 4);
  EXPECT_EQ(j["cycles"][2]["cycle"], 2);
  const auto& out2 = j["cycles"][2]["outcomes"];
  ASSERT_EQ(out2.size(), 1u) << j.dump();
  EXPECT_EQ(out2[0]["id"], "m.config");
  EXPECT_EQ(out2[0]["outcome"], "updated");
  EXPECT_EQ(out2[0]["reason"], "drift: content changed");
  EXPECT_TRUE(out2[0]["wrote"].get<std::string>().starts_with("sha256:"));
  EXPECT_EQ(j["cycles"][2]["summary"]["unchanged"], 4);
}

// A user with no write access to anything: nobody, in a group that may read
// the state dir.
class NonRootOperator : public History {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch to another user";
    History::SetUp();
    const struct group* g = ::getgrnam("adm");
    if (!g) GTEST_SKIP() << "no group adm to grant read access through";
    gid = g->gr_gid;
    // Let nobody reach the state dir; the dir itself is 0750 root:adm, files 0640.
    for (const auto& dir : {work, root, root + "/var", root + "/var/lib"})
      fs::permissions(dir, fs::perms::others_exec, fs::perm_options::add);
    ASSERT_EQ(::chown(stateDir().c_str(), 0, gid), 0);
    for (const auto& e : fs::directory_iterator(stateDir())) {
      if (e.path().filename().string().starts_with("state.db")) {
        ASSERT_EQ(::chown(e.path().c_str(), 0, gid), 0);
      }
    }
  }

  Result asOperator(std::vector<std::string> args) {
    std::vector<std::string> argv = {"setpriv", "--reuid=65534", "--regid=65534",
                                     "--groups=" + std::to_string(gid), MESH_HOST_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    for (const char* a : {"--root", root.c_str(), "--node", "test"}) argv.emplace_back(a);
    return runCommand(argv);
  }

  gid_t gid = 0;
};

TEST_F(NonRootOperator, StatusAndHistoryReadTheStoreAndShowNoSecret) {
  struct stat st {};
  ASSERT_EQ(::stat(stateDir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750u);
  for (const char* f : {"/state.db", "/state.db-wal", "/state.db-shm"}) {
    ASSERT_EQ(::stat((stateDir() + f).c_str(), &st), 0) << f;
    // The WAL index is root's alone: whoever can open it can stall root's writes
    // (the operator reads the WAL into an index of its own).
    EXPECT_EQ(st.st_mode & 0777, std::string_view(f) == "/state.db-shm" ? 0600u : 0640u) << f;
  }
  // The operator really cannot write there.
  EXPECT_NE(asOperator({"apply", declPath}).code, 0);
  const auto before = snapshotTree(stateDir());

  const std::string hashOfSecret =
      "sha256:" + runCommand({"sh", "-c", std::string("printf %s '") + kSecret + "' | sha256sum"})
                      .out.substr(0, 64);
  for (const auto& args : std::vector<std::vector<std::string>>{{"status"},
                                                                {"status", "--json", "-v"},
                                                                {"history"},
                                                                {"history", "--json"},
                                                                {"history", "m.key", "--json"},
                                                                {"generations"}}) {
    Result r = asOperator(args);
    EXPECT_EQ(r.code, 0) << args[0] << ": " << r.out << r.err;
    EXPECT_FALSE(r.out.empty()) << args[0];
    EXPECT_EQ(r.out.find(kSecret), std::string::npos) << args[0] << " shows the secret";
    EXPECT_EQ(r.err.find(kSecret), std::string::npos) << args[0] << " shows the secret";
    EXPECT_EQ(r.out.find(hashOfSecret), std::string::npos)
        << args[0] << " shows an unkeyed digest of the secret";
  }
  const auto status = asOperator({"status", "--json"}).json();
  bool sawKey = false;
  for (const auto& r : status["resources"])
    if (r["id"] == "m.key") {
      sawKey = true;
      EXPECT_TRUE(r["wrote"].get<std::string>().starts_with("sha256:")) << r.dump();
    }
  EXPECT_TRUE(sawKey);
  EXPECT_EQ(snapshotTree(stateDir()), before) << "a read-only operator changed the state dir";
}

}  // namespace
}  // namespace mesh::e2e
