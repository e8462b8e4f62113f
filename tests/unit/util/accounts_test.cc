// util/accounts: the passwd/group line parsers, and where a name resolves — in a
// root's own etc/passwd and etc/group alone when it has them, else on the host.
#include "util/accounts.hh"

#include <gtest/gtest.h>
#include <pwd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../../support/temp_dir.hh"

namespace mesh {
namespace {

class AccountsRoot : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::create_directories(root_ + "/etc"); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(root_ + "/etc/" + name) << text;
  }
  test::TempDir tmp_{"mesh-accounts-test"};
  std::string root_ = tmp_.path;
};

TEST(AccountsLines, APasswdLineParsesIntoItsFields) {
  auto u = parsePasswdLine("web:x:1001:1002:Web,,,:/srv/web:/usr/sbin/nologin");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->name, "web");
  EXPECT_EQ(u->uid, 1001u);
  EXPECT_EQ(u->gid, 1002u);
  EXPECT_EQ(u->home, "/srv/web");
  EXPECT_EQ(u->shell, "/usr/sbin/nologin");
}

TEST(AccountsLines, APasswdLineThatDoesNotParseIsNone) {
  for (const char* bad : {"", "web", "web:x:1001:1002::/srv", "web:x:1001:1002::/srv:/bin/sh:extra",
                          ":x:1:1::/:/bin/sh", "web:x:-1:1::/:/bin/sh", "web:x:1a:1::/:/bin/sh",
                          "web:x::1::/:/bin/sh", "web:x:1:4294967296::/:/bin/sh"})
    EXPECT_FALSE(parsePasswdLine(bad)) << bad;
  EXPECT_TRUE(parsePasswdLine("web:x:4294967295:0:::"));
}

TEST(AccountsLines, AGroupLineListsItsMembersInOrder) {
  auto g = parseGroupLine("web:x:1002:ana,bo,cy");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->name, "web");
  EXPECT_EQ(g->gid, 1002u);
  EXPECT_EQ(g->members, (std::vector<std::string>{"ana", "bo", "cy"}));
  auto empty = parseGroupLine("web:x:1002:");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->members.empty());
  for (const char* bad : {"", "web:x:1002", "web:x:x:", ":x:1:", "web:x:1:a:b"})
    EXPECT_FALSE(parseGroupLine(bad)) << bad;
}

TEST_F(AccountsRoot, ARootWithItsOwnPasswdResolvesThereAlone) {
  write("passwd",
        "# made by a test\n+nis\nweb:x:1001:1002::/srv/web:/bin/sh\n"
        "broken line\nweb:x:9:9::/:/bin/sh\n");
  write("group", "web:x:1002:web\n-nis\n");
  const Accounts accounts(root_);
  EXPECT_TRUE(accounts.inFiles());
  EXPECT_EQ(accounts.uid("web"), 1001u) << "the first of two lines for one name counts";
  EXPECT_EQ(accounts.gid("web"), 1002u);
  // The host has root and daemon; this root's files do not: they resolve to nothing here,
  // never to the host's ids.
  ASSERT_NE(::getpwnam("daemon"), nullptr) << "the test assumes the host has a daemon user";
  EXPECT_FALSE(accounts.uid("daemon"));
  EXPECT_FALSE(accounts.gid("root"));
  EXPECT_EQ(accounts.uid("4242"), 4242u) << "a number is its own id";
  EXPECT_EQ(accounts.gid("0"), 0u);
  EXPECT_EQ(readGroups(root_).size(), 1u) << "the NIS line is skipped";
  EXPECT_EQ(readUser(root_, "web")->home, "/srv/web");
  EXPECT_FALSE(readUser(root_, "nobody-here"));
}

TEST_F(AccountsRoot, ARootWithoutPasswdResolvesOnTheHost) {
  const Accounts accounts(root_);
  EXPECT_FALSE(accounts.inFiles());
  EXPECT_EQ(accounts.uid("root"), 0u);
  EXPECT_EQ(accounts.gid("root"), 0u);
  EXPECT_FALSE(accounts.uid("no-such-user-mesh-host-test"));
  EXPECT_TRUE(readGroups(root_).empty()) << "missing files read as empty";
  EXPECT_FALSE(readGroup(root_, "root"));
}

TEST(AccountsHost, TheRootSlashResolvesThroughNssEvenWithItsOwnPasswd) {
  const Accounts accounts("/");
  EXPECT_FALSE(accounts.inFiles());
  EXPECT_EQ(accounts.uid("root"), 0u);
}

}  // namespace
}  // namespace mesh
