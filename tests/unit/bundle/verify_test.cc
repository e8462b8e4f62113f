// verify(): every kind of drift is reported, through a descriptor of the tree;
// the fingerprint cache skips hashing only for files that were not written since.
// unlisted(): what a tree holds beyond a manifest.
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

// The index of the entry at `path` in m: what a fingerprint is keyed by.
uint32_t indexOf(const Manifest& m, const std::string& path) {
  for (size_t i = 0; i < m.entries.size(); ++i)
    if (m.entries[i].path == path) return static_cast<uint32_t>(i);
  ADD_FAILURE() << "no entry " << path;
  return UINT32_MAX;
}

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
    m = test::unpackTo(archive, dest, {});
    tree = test::openDir(dest);
  }

  // Waits until the unpacked files are old enough for their fingerprints to be trusted.
  void letFingerprintsSettle() { std::this_thread::sleep_for(std::chrono::milliseconds(1100)); }

  test::TempDir tmp;
  std::string archive, dest;
  Manifest m;
  Fd tree;  // the tree as mesh-host holds it: opened once, O_NOFOLLOW
};

TEST_F(Verify, UntouchedTreeIsIdentical) {
  EXPECT_EQ(verify(tree.get(), m).difference, std::nullopt);
}

TEST_F(Verify, EditedFileOfTheSameSize) {
  test::writeText(dest + "/bin/tool", "tool v2", 0755);
  EXPECT_EQ(verify(tree.get(), m).difference, "changed: bin/tool");
}

TEST_F(Verify, EditedFileOfAnotherSize) {
  test::writeText(dest + "/etc/conf", "a = 22\n", 0644);
  EXPECT_EQ(verify(tree.get(), m).difference, "changed: etc/conf");
}

TEST_F(Verify, DeletedFileAndDirectory) {
  ::unlink((dest + "/etc/conf").c_str());
  EXPECT_EQ(verify(tree.get(), m).difference, "missing: etc/conf");
  ::rmdir((dest + "/var").c_str());
  EXPECT_EQ(verify(tree.get(), m).difference, "missing: etc/conf");  // the first in path order
}

TEST_F(Verify, ChecksTheTreeItsDescriptorNamesNotThePath) {
  // The path is swapped for a link to an edited copy: what was opened is checked.
  std::filesystem::rename(dest, tmp.path + "/moved");
  sh("cp -a " + tmp.path + "/moved " + tmp.path + "/copy");
  test::writeText(tmp.path + "/copy/bin/tool", "tool v2", 0755);
  std::filesystem::create_directory_symlink(tmp.path + "/copy", dest);
  EXPECT_EQ(verify(tree.get(), m).difference, std::nullopt);
  test::writeText(tmp.path + "/moved/etc/conf", "a = 2\n", 0644);
  EXPECT_EQ(verify(tree.get(), m, nullptr, "/srv/app").difference, "changed: etc/conf");
}

TEST_F(Verify, DoesNotMoveTheCallersOffset) {
  // verify() lists its own open file description: the caller's can list again.
  EXPECT_EQ(verify(tree.get(), m).difference, std::nullopt);
  EXPECT_EQ(verify(tree.get(), m).difference, std::nullopt);
  test::writeText(dest + "/zzz", "late");
  EXPECT_EQ(verify(tree.get(), m).difference, "unexpected: zzz");
}

TEST_F(Verify, LinkInsideTheTreeIsNotFollowed) {
  // bin replaced by a link to a directory holding what bin held: a link, not bin.
  sh("mv " + dest + "/bin " + tmp.path + "/bin-elsewhere");
  std::filesystem::create_directory_symlink(tmp.path + "/bin-elsewhere", dest + "/bin");
  EXPECT_EQ(verify(tree.get(), m).difference, "changed: bin is now a symlink");
}

TEST_F(Verify, UnlistedNamesWhatTheManifestDoesNot) {
  EXPECT_EQ(unlisted(tree.get(), m, 5).count, 0u);
  test::writeText(dest + "/a.conf", "mine");
  test::writeText(dest + "/var/logs/1", "log");
  test::writeText(dest + "/var/logs/2", "log");
  std::filesystem::create_directories(dest + "/empty");
  std::filesystem::create_directory_symlink("/etc", dest + "/etc/link-to-etc");
  std::filesystem::create_directory_symlink("/etc", dest + "/through");
  auto u = unlisted(tree.get(), m, 5);
  EXPECT_EQ(u.count, 6u);
  EXPECT_EQ(u.first, (std::vector<std::string>{"a.conf", "empty/", "etc/link-to-etc", "through",
                                               "var/logs/1"}));
  u = unlisted(tree.get(), m, 2);
  EXPECT_EQ(u.count, 6u);
  EXPECT_EQ(u.first, (std::vector<std::string>{"a.conf", "empty/"}));
  // A named path of another type: what is inside it counts.
  ::unlink((dest + "/etc/conf").c_str());
  test::writeText(dest + "/etc/conf/inner", "x");
  u = unlisted(tree.get(), m, 10);
  EXPECT_EQ(u.count, 7u);
  EXPECT_EQ(u.first[2], "etc/conf/inner");
}

TEST_F(Verify, AddedFile) {
  test::writeText(dest + "/var/junk.txt", "junk");
  EXPECT_EQ(verify(tree.get(), m).difference, "unexpected: var/junk.txt");
}

TEST_F(Verify, ChangedMode) {
  ::chmod((dest + "/bin/tool").c_str(), 0600);
  EXPECT_EQ(verify(tree.get(), m).difference, "mode of bin/tool is 0600, want 0755");
  ::chmod((dest + "/bin/tool").c_str(), 0755);
  ::chmod((dest + "/var").c_str(), 0755);
  EXPECT_EQ(verify(tree.get(), m).difference, "mode of var is 0755, want 0700");
}

TEST_F(Verify, RetargetedSymlink) {
  ::unlink((dest + "/etc/l").c_str());
  ASSERT_EQ(::symlink("elsewhere", (dest + "/etc/l").c_str()), 0);
  EXPECT_EQ(verify(tree.get(), m).difference, "link etc/l points to elsewhere, want conf");
  ::unlink((dest + "/etc/l").c_str());
  ASSERT_EQ(::symlink("co", (dest + "/etc/l").c_str()), 0);
  EXPECT_EQ(verify(tree.get(), m).difference, "link etc/l points to co, want conf");
}

TEST_F(Verify, ChangedType) {
  ::unlink((dest + "/etc/l").c_str());
  test::writeText(dest + "/etc/l", "conf");
  EXPECT_EQ(verify(tree.get(), m).difference, "changed: etc/l is now a file");
  ::unlink((dest + "/bin/tool").c_str());
  ASSERT_EQ(::symlink("tool v1", (dest + "/bin/tool").c_str()), 0);
  EXPECT_EQ(verify(tree.get(), m).difference, "changed: bin/tool is now a symlink");
}

TEST_F(Verify, FreshIsEmptyForRacyFilesAndOnDifference) {
  auto v = verify(tree.get(), m);
  EXPECT_EQ(v.difference, std::nullopt);
  EXPECT_TRUE(v.fresh.fingerprints.empty());  // just written: too recent to trust
  test::writeText(dest + "/junk", "j");
  v = verify(tree.get(), m);
  EXPECT_NE(v.difference, std::nullopt);
  EXPECT_TRUE(v.fresh.fingerprints.empty());
}

TEST_F(Verify, TrustedFingerprintSkipsHashing) {
  // A manifest whose digest is wrong verifies only if the file is not hashed.
  Manifest lie = m;
  for (auto& e : lie.entries)
    if (e.path == "bin/tool") e.content = Digest::ofBytes("something else");
  EXPECT_EQ(verify(tree.get(), lie).difference, "changed: bin/tool");
  VerifyCache trusted;
  trusted.fingerprints = {
      {indexOf(m, "bin/tool"), Fingerprint::of(*lstatPath(dest + "/bin/tool"))}};
  EXPECT_EQ(verify(tree.get(), lie, &trusted).difference, std::nullopt);
  trusted.fingerprints[0].second = *Fingerprint::parse("1:2:3:4:5:644:0:0");
  EXPECT_EQ(verify(tree.get(), lie, &trusted).difference, "changed: bin/tool");
  // Another file's fingerprint does not vouch for this one.
  trusted.fingerprints = {
      {indexOf(m, "etc/conf"), Fingerprint::of(*lstatPath(dest + "/bin/tool"))}};
  EXPECT_EQ(verify(tree.get(), lie, &trusted).difference, "changed: bin/tool");
}

TEST_F(Verify, CacheFromAPreviousVerify) {
  letFingerprintsSettle();
  auto verified = verify(tree.get(), m);
  ASSERT_EQ(verified.difference, std::nullopt);
  const VerifyCache first = verified.fresh;
  ASSERT_EQ(first.fingerprints.size(), 2u);
  EXPECT_EQ(first.fingerprints[0].first, indexOf(m, "bin/tool"));
  EXPECT_EQ(first.fingerprints[1].first, indexOf(m, "etc/conf"));

  auto second = verify(tree.get(), m, &first);
  EXPECT_EQ(second.difference, std::nullopt);
  EXPECT_EQ(second.fresh.fingerprints, first.fingerprints);

  // Same size, and even the old mtime restored: ctime still moves, so it is re-hashed.
  struct stat before = *lstatPath(dest + "/bin/tool");
  test::writeText(dest + "/bin/tool", "tool v2", 0755);
  const timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, (dest + "/bin/tool").c_str(), times, 0), 0);
  EXPECT_EQ(verify(tree.get(), m, &first).difference, "changed: bin/tool");
}

}  // namespace
}  // namespace mesh::bundle
