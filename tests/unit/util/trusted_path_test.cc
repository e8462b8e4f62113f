// requireTrustedDirectory: a path whose directories and links only root or this user
// can change passes; one another user could swap under a root process is refused,
// whether the other user owns a directory on the way, may write into one that is not
// sticky, owns a link on the way, or a root-owned link leads through their directory.
#include "util/trusted_path.hh"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "../../support/temp_dir.hh"
#include "util/error.hh"

namespace mesh {
namespace {

constexpr uid_t kOtherUser = 65534;  // nobody: an unprivileged local user

class TrustedPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "giving a directory to another user needs root";
  }

  std::string mkdir(const std::string& name, mode_t mode, uid_t owner = 0) {
    const std::string p = dir + "/" + name;
    EXPECT_EQ(::mkdir(p.c_str(), mode), 0) << p;
    EXPECT_EQ(::chmod(p.c_str(), mode), 0);  // past the umask
    EXPECT_EQ(::chown(p.c_str(), owner, owner), 0);
    return p;
  }
  std::string link(const std::string& name, const std::string& target, uid_t owner = 0) {
    const std::string p = dir + "/" + name;
    EXPECT_EQ(::symlink(target.c_str(), p.c_str()), 0);
    EXPECT_EQ(::lchown(p.c_str(), owner, owner), 0);
    return p;
  }

  static std::string refusal(const std::string& path, bool mayBeMissing = false) {
    try {
      requireTrustedDirectory(path, mayBeMissing);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  mesh::test::TempDir tmp{"mesh-trusted"};
  std::string dir = tmp.path;
};

TEST_F(TrustedPathTest, DirectoriesOfRootAndAStickyTmpPass) {
  // /tmp is world-writable and sticky; the temp dir under it is root's, 0700.
  EXPECT_EQ(refusal(mkdir("ours", 0755) + "/"), "");
  EXPECT_EQ(refusal(mkdir("sticky", 01777)), "");
  EXPECT_EQ(refusal(dir + "/ours/not-yet/made", /*mayBeMissing=*/true), "");
}

TEST_F(TrustedPathTest, AMissingDirectoryIsRefusedUnlessAllowed) {
  EXPECT_NE(refusal(dir + "/missing"), "");
  EXPECT_EQ(refusal(dir + "/missing", /*mayBeMissing=*/true), "");
}

TEST_F(TrustedPathTest, ADirectoryOfAnotherUserOnTheWayIsRefused) {
  const std::string eve = mkdir("eve", 0755, kOtherUser);
  EXPECT_EQ(::mkdir((eve + "/run").c_str(), 0755), 0);  // root's, inside eve's
  const std::string why = refusal(eve + "/run");
  EXPECT_NE(why.find(eve + " belongs to uid 65534"), std::string::npos) << why;
  // Even when what lies below is still to be made.
  EXPECT_NE(refusal(eve + "/later", /*mayBeMissing=*/true), "");
}

TEST_F(TrustedPathTest, ADirectoryOthersMayWriteIsRefusedUnlessSticky) {
  const std::string open = mkdir("open", 0777);
  const std::string why = refusal(open);
  EXPECT_NE(why.find("writable by others (mode 777) and not sticky"), std::string::npos) << why;
  EXPECT_NE(refusal(mkdir("group", 0775)), "");
  EXPECT_EQ(refusal(mkdir("tmp-like", 01777)), "");
}

TEST_F(TrustedPathTest, ALinkOfAnotherUserIsRefused) {
  const std::string target = mkdir("target", 0755);
  const std::string why = refusal(link("planted", target, kOtherUser) + "/run", true);
  EXPECT_NE(why.find("is a link of uid 65534"), std::string::npos) << why;
}

TEST_F(TrustedPathTest, ARootLinkIsFollowedAndWhereItLeadsChecked) {
  // Like /var/run -> /run: root's link to root's directory.
  EXPECT_EQ(refusal(link("var-run", mkdir("run", 0755))), "");
  // A root link into another user's directory: they could swap what lies below.
  const std::string eve = mkdir("eve", 0755, kOtherUser);
  EXPECT_EQ(::mkdir((eve + "/run").c_str(), 0755), 0);
  const std::string why = refusal(link("into-eve", eve + "/run"));
  EXPECT_NE(why.find("belongs to uid 65534"), std::string::npos) << why;
}

TEST_F(TrustedPathTest, ARelativePathIsRefused) {
  EXPECT_NE(refusal("relative/dir"), "");
}

}  // namespace
}  // namespace mesh
