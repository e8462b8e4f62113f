// Archives that try to write outside their destination, or to exhaust the
// machine: each is refused, names the entry, writes nothing outside and leaves
// no destination behind.
#include <gtest/gtest.h>

#include "bundle/unpack.hh"
#include "test_util.hh"
#include "util/error.hh"

namespace mesh::bundle {
namespace {

using test::Crafted;

class Hostile : public ::testing::Test {
 protected:
  void SetUp() override {
    outside = tmp.path + "/outside";
    std::filesystem::create_directories(outside);
    archive = tmp.path + "/b.tar";
    dest = tmp.path + "/dest";
  }

  // Unpacks and reads the archive; both must refuse it with `why` in the message.
  void expectRefused(const std::string& why, const Limits& limits = {}) {
    for (bool write : {true, false}) {
      try {
        if (write)
          test::unpackTo(archive, dest, limits);
        else
          readManifest(archive, limits);
        ADD_FAILURE() << (write ? "unpack" : "readManifest") << " accepted it";
      } catch (const Error& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find(why), std::string::npos) << msg;
        EXPECT_EQ(msg.rfind("archive " + archive + ": ", 0), 0u) << msg;
      }
      EXPECT_FALSE(test::exists(dest)) << "the destination was left behind";
      EXPECT_TRUE(test::isEmptyDir(outside)) << "something was written outside";
    }
  }

  test::TempDir tmp;
  std::string outside, archive, dest;
};

TEST_F(Hostile, AbsolutePathCrafted) {
  test::craftTar(archive, {{Crafted::File, "ok", "fine"}, {Crafted::File, outside + "/x", "evil"}});
  expectRefused("entry '" + outside + "/x': absolute path");
}

TEST_F(Hostile, AbsolutePathFromTarP) {
  test::writeText(tmp.path + "/src/f", "evil");
  test::sh("tar -P -cf " + archive + " " + tmp.path + "/src/f");
  std::filesystem::remove_all(tmp.path + "/src");
  expectRefused("absolute path");
  EXPECT_FALSE(test::exists(tmp.path + "/src/f"));
}

TEST_F(Hostile, DotDotEntry) {
  test::craftTar(archive, {{Crafted::File, "../outside/x", "evil"}});
  expectRefused("entry '../outside/x': path has a '..' component");
  test::craftTar(archive, {{Crafted::Dir, "a", ""}, {Crafted::File, "a/../../outside/x", "evil"}});
  expectRefused("'..' component");
}

TEST_F(Hostile, SymlinkEscaping) {
  test::craftTar(archive, {{Crafted::Symlink, "evil", "../../etc"}});
  expectRefused("entry 'evil': symlink target '../../etc' leaves the bundle");
  test::craftTar(archive, {{Crafted::Symlink, "a/b/evil", "../../.."}});
  expectRefused("leaves the bundle");
  test::craftTar(archive, {{Crafted::Symlink, "abs", "/etc/passwd"}});
  expectRefused("symlink to absolute path '/etc/passwd'");
}

TEST_F(Hostile, SymlinkEscapingThroughAnotherLink) {
  // Lexically "a/l2" -> "l1/.." is "a"; but l1 is the root, and the root's ".." is outside.
  test::craftTar(archive, {{Crafted::Symlink, "a/l1", ".."}, {Crafted::Symlink, "a/l2", "l1/.."}});
  expectRefused("entry 'a/l2': symlink target 'l1/..' leaves the bundle");
  // The same, with the link it goes through arriving later.
  test::craftTar(archive, {{Crafted::Symlink, "a/l2", "l1/.."}, {Crafted::Symlink, "a/l1", ".."}});
  expectRefused("entry 'a/l2'");
}

TEST_F(Hostile, SymlinkLoop) {
  test::craftTar(archive, {{Crafted::Symlink, "a", "b"}, {Crafted::Symlink, "b", "a"}});
  expectRefused("loops");
}

TEST_F(Hostile, FileThroughAnAbsoluteSymlink) {
  test::craftTar(archive, {{Crafted::Symlink, "d", outside}, {Crafted::File, "d/x", "evil"}});
  expectRefused("entry 'd': symlink to absolute path");
}

TEST_F(Hostile, FileThroughAnInsideSymlink) {
  test::craftTar(archive, {{Crafted::Dir, "real", ""},
                           {Crafted::Symlink, "d", "real"},
                           {Crafted::File, "d/x", "sneaky"}});
  expectRefused("entry 'd/x': 'd' on its path is a symlink");
}

TEST_F(Hostile, DirectoryThroughAFile) {
  test::craftTar(archive, {{Crafted::File, "f", "x"}, {Crafted::File, "f/g", "y"}});
  expectRefused("'f' on its path is a file");
}

TEST_F(Hostile, HardLinkOutside) {
  test::writeText(outside + "/secret", "s");
  test::craftTar(archive, {{Crafted::HardLink, "l", outside + "/secret"}});
  std::filesystem::remove(outside + "/secret");
  expectRefused("entry 'l': hard link to '" + outside + "/secret': absolute path");
  test::craftTar(archive, {{Crafted::HardLink, "l", "../outside/secret"}});
  expectRefused("'..' component");
}

TEST_F(Hostile, HardLinkToSomethingNotYetUnpacked) {
  test::craftTar(archive, {{Crafted::HardLink, "l", "f"}, {Crafted::File, "f", "x"}});
  expectRefused("entry 'l': hard link to 'f', which is not earlier in the archive");
}

TEST_F(Hostile, HardLinkToASymlinkOrDirectory) {
  test::craftTar(archive, {{Crafted::Symlink, "s", "x"}, {Crafted::HardLink, "l", "s"}});
  expectRefused("which is not a regular file");
  test::craftTar(archive, {{Crafted::Dir, "d", ""}, {Crafted::HardLink, "l", "d"}});
  expectRefused("which is not a regular file");
}

TEST_F(Hostile, SpecialFiles) {
  test::craftTar(archive, {{Crafted::Fifo, "fifo", ""}});
  expectRefused("entry 'fifo': FIFOs are not allowed");
  test::craftTar(archive, {{Crafted::CharDevice, "null", ""}});
  expectRefused("entry 'null': character devices are not allowed");
  test::craftTar(archive, {{Crafted::BlockDevice, "loop", ""}});
  expectRefused("entry 'loop': block devices are not allowed");
}

TEST_F(Hostile, TooManyEntries) {
  test::craftTar(archive, {{Crafted::File, "a", "1"},
                           {Crafted::File, "b", "2"},
                           {Crafted::File, "c", "3"},
                           {Crafted::File, "d", "4"}});
  expectRefused("entry 'd': archive exceeds 3 entries", Limits{.maxEntries = 3});
  EXPECT_EQ(readManifest(archive, Limits{.maxEntries = 4}).entries.size(), 4u);
}

TEST_F(Hostile, TooManyBytes) {
  test::craftTar(archive, {{Crafted::File, "a", "12345"}, {Crafted::File, "b", "67890"}});
  expectRefused("entry 'b': unpacks to more than 9 bytes", Limits{.maxBytes = 9});
  EXPECT_EQ(readManifest(archive, Limits{.maxBytes = 10}).bytes(), 10u);
}

TEST_F(Hostile, CompressedBombStopsEarly) {
  test::sh("head -c 64M /dev/zero > " + tmp.path + "/zeros && tar -C " + tmp.path + " -czf " +
           archive + " zeros && rm " + tmp.path + "/zeros");
  expectRefused("entry 'zeros': unpacks to more than 1048576 bytes", Limits{.maxBytes = 1 << 20});
}

TEST_F(Hostile, DuplicateEntries) {
  test::craftTar(archive, {{Crafted::File, "f", "one"}, {Crafted::File, "f", "two"}});
  expectRefused("entry 'f': duplicate entry");
  test::craftTar(archive, {{Crafted::File, "f", "one"}, {Crafted::File, "./f", "two"}});
  expectRefused("entry './f': duplicate entry");
  test::craftTar(archive, {{Crafted::Dir, "d", ""}, {Crafted::File, "d", "two"}});
  expectRefused("duplicate entry");
  test::craftTar(archive, {{Crafted::File, "d", "x"}, {Crafted::Dir, "d", ""}});
  expectRefused("duplicate entry");
}

TEST_F(Hostile, NonDirectoryRoot) {
  test::craftTar(archive, {{Crafted::Symlink, "./", "/"}});
  expectRefused("names the bundle's root");
}

}  // namespace
}  // namespace mesh::bundle
