// `user` and `group` on their own (kinds/user.cc, group.cc): Debian's real
// useradd/groupadd with --root on a temp root holding its own etc/passwd,
// group, shadow and gshadow, through the fixture that stands in for the cycle
// (kind_fixture.hh). The host's accounts are never touched.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "apply/kinds/account_tools.hh"
#include "kind_fixture.hh"
#include "util/accounts.hh"

namespace mesh::apply::test {
namespace {

class AccountKind : public KindTest {
 protected:
  void SetUp() override {
    KindTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "useradd --root needs root";
    std::filesystem::create_directories(at("/etc"));
    write("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\n");
    write("/etc/group", "root:x:0:\nadm:x:4:\n");
    write("/etc/shadow", "root:*:19000:0:99999:7:::\n");
    write("/etc/gshadow", "root:*::\nadm:*::\n");
  }
  const decl::Resource& user(const std::string& extra = "") {
    return declare("[module.app.user.app]\nname = \"app\"\n" + extra);
  }
};

TEST_F(AccountKind, AbsentUserIsCreatedWithoutShellHomeOrPassword) {
  const auto& r = user();
  const Outcome o = converge(r);
  EXPECT_EQ(o.verdict(), Verdict::Created);
  EXPECT_EQ(o.reason(), "new");
  EXPECT_TRUE(o.detail().starts_with("created user app (uid ")) << o.detail();
  EXPECT_EQ(o.held(), wantOf(r));
  auto u = readUser(root, "app");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->shell, "/usr/sbin/nologin");
  EXPECT_EQ(u->home, "/nonexistent");
  EXPECT_FALSE(std::filesystem::exists(at("/nonexistent")));
  auto g = readGroup(root, "app");
  ASSERT_TRUE(g);
  EXPECT_EQ(u->gid, g->gid);
  EXPECT_EQ(AccountObserved::parse(o.observed).created, true);
}

TEST_F(AccountKind, AsRecordedIsUnchangedAndRunsNoTool) {
  const auto& r = user("groups = [\"adm\"]\nhome = \"/var/lib/app\"\n");
  const auto rec = applied(r);
  EXPECT_TRUE(std::filesystem::is_directory(at("/var/lib/app")));  // declared: made
  const uint64_t runs = accountToolRuns();
  const auto passwd = read("/etc/passwd");
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Unchanged);
  EXPECT_EQ(o.reason(), "");
  EXPECT_EQ(accountToolRuns(), runs);
  EXPECT_EQ(read("/etc/passwd"), passwd);
}

TEST_F(AccountKind, DriftedShellIsRepaired) {
  const auto& r = user();
  const auto rec = applied(r);
  auto text = read("/etc/passwd");
  text.replace(text.find("/usr/sbin/nologin"), 17, "/bin/bash");
  write("/etc/passwd", text);
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "drift: shell /bin/bash, want /usr/sbin/nologin");
  EXPECT_EQ(readUser(root, "app")->shell, "/usr/sbin/nologin");
}

TEST_F(AccountKind, APlanCreatesNothing) {
  const auto& r = user();
  const auto before = read("/etc/passwd");
  const uint64_t runs = accountToolRuns();
  const Outcome o = converge(r, nullptr, Mode::Plan);
  EXPECT_EQ(o.verdict(), Verdict::Created);
  EXPECT_EQ(o.detail(), "would create user app");
  EXPECT_EQ(read("/etc/passwd"), before);
  EXPECT_EQ(accountToolRuns(), runs);
}

TEST_F(AccountKind, AGroupIsCreatedAndItsGidKept) {
  const auto& r = declare("[module.app.group.data]\nname = \"data\"\ngid = 991\n");
  const auto rec = applied(r);
  ASSERT_TRUE(readGroup(root, "data"));
  EXPECT_EQ(readGroup(root, "data")->gid, 991u);
  auto text = read("/etc/group");
  text.replace(text.find("data:x:991"), 10, "data:x:992");
  write("/etc/group", text);
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "drift: gid 992, want 991");
  EXPECT_EQ(readGroup(root, "data")->gid, 991u);
}

TEST_F(AccountKind, RemovalDeletesOnlyWhatItCreatedNeverFiles) {
  const auto& r = user("home = \"/var/lib/app\"\n");
  const auto rec = applied(r);
  write("/var/lib/app/data", "kept");
  Settings settings;
  settings.root = root;
  settings.stateDir = stateDir;
  settings.blobs = blobs;
  auto ctx = std::make_unique<Context>(settings);
  Step s(*ctx);
  const Removal gone = applierFor(decl::Kind::User).remove(s, rec);
  EXPECT_EQ(gone.verdict(), Verdict::Removed);
  EXPECT_EQ(gone.detail(), "deleted user app (its home and files are left in place)");
  EXPECT_FALSE(readUser(root, "app"));
  EXPECT_EQ(read("/var/lib/app/data"), "kept");

  write("/etc/passwd", read("/etc/passwd") + "old:x:1600:1600::/:/bin/sh\n");
  const auto& adopted = declare("[module.app.user.old]\nname = \"old\"\nshell = \"/bin/sh\"\n");
  const Outcome o = converge(adopted);
  EXPECT_EQ(o.verdict(), Verdict::Unchanged);
  EXPECT_EQ(o.reason(), "adopted");
  const Removal kept = applierFor(decl::Kind::User).remove(s, recordOf(adopted, o));
  EXPECT_EQ(kept.verdict(), Verdict::Released);
  EXPECT_TRUE(readUser(root, "old"));
}

}  // namespace
}  // namespace mesh::apply::test
