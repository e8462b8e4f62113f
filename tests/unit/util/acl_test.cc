// util/acl: a named user's entry written through a directory's descriptor reads
// back as written, the mask is the group class's union, and writing no named
// entry leaves a plain mode (no extended attribute).
#include "util/acl.hh"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>

#include "../../support/temp_dir.hh"
#include "util/error.hh"
#include "util/fd.hh"

namespace mesh {
namespace {

TEST(Acl, ANamedUserReadsBackAndNoneLeavesAPlainMode) {
  test::TempDir tmp;
  const std::string dir = tmp.path + "/d";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  ASSERT_TRUE(fd);
  acl::Access plain = acl::read(fd.get(), dir);
  EXPECT_EQ(plain.owner, 7u);
  EXPECT_EQ(plain.group, 0u);
  EXPECT_EQ(plain.other, 0u);
  EXPECT_FALSE(plain.hasMask);
  EXPECT_TRUE(plain.users.empty());

  acl::Access want = plain;
  want.users[54321] = acl::kRead | acl::kExec;  // any uid: it need not exist
  try {
    acl::write(fd.get(), want, dir);
  } catch (const SysError& e) {
    if (e.err() == EOPNOTSUPP) GTEST_SKIP() << "no POSIX ACLs on " << tmp.path;
    throw;
  }
  const acl::Access back = acl::read(fd.get(), dir);
  EXPECT_EQ(back, want.normalised());
  EXPECT_EQ(back.users.at(54321), acl::kRead | acl::kExec);
  EXPECT_TRUE(back.hasMask);
  EXPECT_EQ(back.mask, acl::kRead | acl::kExec);  // the group class: group --- and r-x
  EXPECT_NE(back, plain);
  struct stat st {};
  ASSERT_EQ(::fstat(fd.get(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);  // the mask shows as the group's bits

  acl::write(fd.get(), plain, dir);
  EXPECT_EQ(acl::read(fd.get(), dir), plain);
  ASSERT_EQ(::fstat(fd.get(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_LT(::fgetxattr(fd.get(), "system.posix_acl_access", nullptr, 0), 0);
}

}  // namespace
}  // namespace mesh
