// verify(): every kind of drift is reported; the fingerprint cache skips hashing
// only for files that were not written since.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "bundle/unpack.hh"
#include "test_util.hh"
#include "util/fs.hh"

namespace mesh::bundle {
namespace {

using test::Crafted;
using test::sh;

class Verify : public ::testing::Test {
 protected:
  void SetUp() override {
    archive = tmp.path + "/b.tar";
    dest = tmp.path + "/dest";
    test::craftTar(archive, {{Crafted::Dir, "bin", "", 0755},
                             {Crafted::File, "bin/tool", "tool v1", 0755},
                             {Crafted::File, "etc/conf", "a = 1\n", 0644},
                             {Crafted::Symlink, "etc/l", "conf", 0777},
                             {Crafted::Dir, "var", "", 0700}});
    m = unpack(archive, dest, {});
  }

  // Waits until the unpacked files are old enough for their fingerprints to be trusted.
  void letFingerprintsSettle() { std::this_thread::sleep_for(std::chrono::milliseconds(1100)); }

  test::TempDir tmp;
  std::string archive, dest;
  Manifest m;
};

TEST_F(Verify, UntouchedTreeIsIdentical) {
  EXPECT_EQ(verify(dest, m), std::nullopt);
}

TEST_F(Verify, EditedFileOfTheSameSize) {
  test::writeText(dest + "/bin/tool", "tool v2", 0755);
  EXPECT_EQ(verify(dest, m), "changed: bin/tool");
}

TEST_F(Verify, EditedFileOfAnotherSize) {
  test::writeText(dest + "/etc/conf", "a = 22\n", 0644);
  EXPECT_EQ(verify(dest, m), "changed: etc/conf");
}

TEST_F(Verify, DeletedFileAndDirectory) {
  ::unlink((dest + "/etc/conf").c_str());
  EXPECT_EQ(verify(dest, m), "missing: etc/conf");
  ::rmdir((dest + "/var").c_str());
  EXPECT_EQ(verify(dest, m), "missing: etc/conf");  // the first in path order
  EXPECT_EQ(verify(tmp.path + "/nothing-here", m), "missing: " + tmp.path + "/nothing-here");
}

TEST_F(Verify, AddedFile) {
  test::writeText(dest + "/var/junk.txt", "junk");
  EXPECT_EQ(verify(dest, m), "unexpected: var/junk.txt");
}

TEST_F(Verify, ChangedMode) {
  ::chmod((dest + "/bin/tool").c_str(), 0600);
  EXPECT_EQ(verify(dest, m), "mode of bin/tool is 0600, want 0755");
  ::chmod((dest + "/bin/tool").c_str(), 0755);
  ::chmod((dest + "/var").c_str(), 0755);
  EXPECT_EQ(verify(dest, m), "mode of var is 0755, want 0700");
}

TEST_F(Verify, RetargetedSymlink) {
  ::unlink((dest + "/etc/l").c_str());
  ASSERT_EQ(::symlink("elsewhere", (dest + "/etc/l").c_str()), 0);
  EXPECT_EQ(verify(dest, m), "link etc/l points to elsewhere, want conf");
  ::unlink((dest + "/etc/l").c_str());
  ASSERT_EQ(::symlink("co", (dest + "/etc/l").c_str()), 0);
  EXPECT_EQ(verify(dest, m), "link etc/l points to co, want conf");
}

TEST_F(Verify, ChangedType) {
  ::unlink((dest + "/etc/l").c_str());
  test::writeText(dest + "/etc/l", "conf");
  EXPECT_EQ(verify(dest, m), "changed: etc/l is now a file");
  ::unlink((dest + "/bin/tool").c_str());
  ASSERT_EQ(::symlink("tool v1", (dest + "/bin/tool").c_str()), 0);
  EXPECT_EQ(verify(dest, m), "changed: bin/tool is now a symlink");
}

TEST_F(Verify, FreshIsEmptyForRacyFilesAndOnDifference) {
  VerifyCache fresh;
  fresh.fingerprints = {{"stale", "x"}};
  EXPECT_EQ(verify(dest, m, nullptr, &fresh), std::nullopt);
  EXPECT_TRUE(fresh.fingerprints.empty());  // just written: too recent to trust
  test::writeText(dest + "/junk", "j");
  EXPECT_NE(verify(dest, m, nullptr, &fresh), std::nullopt);
  EXPECT_TRUE(fresh.fingerprints.empty());
}

TEST_F(Verify, TrustedFingerprintSkipsHashing) {
  // A manifest whose digest is wrong verifies only if the file is not hashed.
  Manifest lie = m;
  for (auto& e : lie.entries)
    if (e.path == "bin/tool") e.content = Digest::ofBytes("something else");
  EXPECT_EQ(verify(dest, lie), "changed: bin/tool");
  VerifyCache trusted;
  trusted.fingerprints = {{"bin/tool", Fingerprint::of(*lstatPath(dest + "/bin/tool")).str()}};
  EXPECT_EQ(verify(dest, lie, &trusted), std::nullopt);
  trusted.fingerprints[0].second = "1:2:3:4:5:644:0:0";
  EXPECT_EQ(verify(dest, lie, &trusted), "changed: bin/tool");
}

TEST_F(Verify, CacheFromAPreviousVerify) {
  letFingerprintsSettle();
  VerifyCache first;
  ASSERT_EQ(verify(dest, m, nullptr, &first), std::nullopt);
  ASSERT_EQ(first.fingerprints.size(), 2u);
  EXPECT_EQ(first.fingerprints[0].first, "bin/tool");
  EXPECT_EQ(first.fingerprints[1].first, "etc/conf");

  VerifyCache second;
  EXPECT_EQ(verify(dest, m, &first, &second), std::nullopt);
  EXPECT_EQ(second.fingerprints, first.fingerprints);

  // Same size, and even the old mtime restored: ctime still moves, so it is re-hashed.
  struct stat before = *lstatPath(dest + "/bin/tool");
  test::writeText(dest + "/bin/tool", "tool v2", 0755);
  const timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, (dest + "/bin/tool").c_str(), times, 0), 0);
  EXPECT_EQ(verify(dest, m, &first), "changed: bin/tool");
}

}  // namespace
}  // namespace mesh::bundle
