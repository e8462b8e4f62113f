#include "util/fs.hh"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "../../support/temp_dir.hh"
#include "util/error.hh"

namespace mesh {
namespace {

class FsTest : public ::testing::Test {
 protected:
  mesh::test::TempDir tmp{"mesh-fs-test"};
  std::string dir = tmp.path;
};

// The name a writer makes is the name its sweeper (gc) finds again, and no other.
TEST(TempName, IsFoundAgainByItsTagOnly) {
  const std::string made = tempNameFor("0123abcd", kUnpackTag);
  EXPECT_TRUE(isTempName(made, kUnpackTag));
  EXPECT_FALSE(isTempName(made, "tmp"));
  EXPECT_FALSE(isTempName(made + "0", kUnpackTag));
  EXPECT_FALSE(isTempName(made.substr(0, made.size() - 1), kUnpackTag));
  EXPECT_FALSE(isTempName(".mesh-new.0123456789ABCDEF", kUnpackTag));
  EXPECT_FALSE(isTempName("0123abcd", kUnpackTag));
}

TEST_F(FsTest, AtomicWriteCreatesParentsAndSetsMode) {
  auto p = dir + "/a/b/c.txt";
  atomicWrite(p, "hello", 0640);
  EXPECT_EQ(readFile(p).value(), "hello");
  auto st = lstatPath(p);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->st_mode & 07777, 0640u);
}

TEST_F(FsTest, AtomicWriteReplacesAndLeavesNoTempFiles) {
  auto p = dir + "/f";
  atomicWrite(p, "one", 0644);
  auto before = lstatPath(p)->st_ino;
  atomicWrite(p, "two", 0644);
  EXPECT_EQ(readFile(p).value(), "two");
  EXPECT_NE(lstatPath(p)->st_ino, before);  // a new inode renamed over the old one
  int entries = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

TEST_F(FsTest, AtomicWriteFailsCleanlyWhenParentIsAFile) {
  atomicWrite(dir + "/file", "x", 0644);
  EXPECT_THROW(atomicWrite(dir + "/file/child", "y", 0644), Error);
  EXPECT_EQ(readFile(dir + "/file").value(), "x");
}

TEST_F(FsTest, LstatMissingIsNullopt) {
  EXPECT_FALSE(lstatPath(dir + "/nope"));
}

TEST_F(FsTest, AtomicSymlinkReplacesTarget) {
  atomicSymlink(dir + "/l", "one");
  atomicSymlink(dir + "/l", "two");
  EXPECT_EQ(std::filesystem::read_symlink(dir + "/l").string(), "two");
}

TEST_F(FsTest, RemoveTreeDoesNotFollowLinks) {
  auto outside = dir + "/outside";
  atomicWrite(outside + "/keep", "k", 0644);
  atomicWrite(dir + "/tree/a/b", "x", 0644);
  std::filesystem::create_directory_symlink(outside, dir + "/tree/link");
  removeTree(dir + "/tree");
  EXPECT_FALSE(lstatPath(dir + "/tree"));
  EXPECT_EQ(readFile(outside + "/keep").value(), "k");
}

TEST_F(FsTest, FingerprintRoundTrip) {
  atomicWrite(dir + "/f", "abc", 0600);
  auto f = Fingerprint::of(*lstatPath(dir + "/f"));
  auto parsed = Fingerprint::parse(f.str());
  ASSERT_TRUE(parsed);
  EXPECT_EQ(*parsed, f);
  EXPECT_FALSE(Fingerprint::parse("1:2:3"));
  EXPECT_FALSE(Fingerprint::parse(f.str() + "x"));
}

// The text is what records hold: written as fmt wrote it before, to the byte,
// so a record from an earlier version still matches the file it describes.
TEST(Fingerprint, TextAsFmtWroteIt) {
  const Fingerprint cases[] = {
      {},
      {8, 1234, 200, 1700000000123456789, 1700000001000000000, 0100644, 0, 0},
      {UINT64_MAX, UINT64_MAX, UINT64_MAX, INT64_MAX, INT64_MIN, UINT32_MAX, UINT32_MAX,
       UINT32_MAX},
      {1, 2, 0, -1, -1700000000000000000, 0120777, 65534, 1000},
  };
  for (const auto& f : cases) {
    const std::string old = fmt::format("{}:{}:{}:{}:{}:{:o}:{}:{}", f.dev, f.ino, f.size,
                                        f.mtimeNs, f.ctimeNs, f.mode, f.uid, f.gid);
    EXPECT_EQ(f.str(), old);
    char text[Fingerprint::kMaxText];
    EXPECT_EQ(std::string_view(text, f.write(text)), old);
    EXPECT_EQ(Fingerprint::parse(old), f) << old;
  }
}

// is(text) is true for the fingerprint's own text only: every field that differs,
// every malformed or out-of-range text, and the same values written otherwise
// (leading zeros, "-0") are not it; what it accepts parses to the same.
TEST(Fingerprint, IsItsOwnTextOnly) {
  const Fingerprint f{8, 1234, 200, -1700000000123456789, 1700000001000000000, 0100644, 0, 1000};
  const std::string text = f.str();
  EXPECT_TRUE(f.is(text));
  std::vector<std::string> texts = {
      text,
      "",
      ":",
      "8:1234:200",
      text + ":",
      text + "x",
      "x" + text,
      "08:01234:200:-1700000000123456789:1700000001000000000:0100644:00:1000",
      "8:1234:200:-1700000000123456789:1700000001000000000:100644:-0:1000",
      "8:1234:200:1700000000123456789:1700000001000000000:100644:0:1000",
      "8:1234:200:-1700000000123456789:-1700000001000000000:100644:0:1000",
      "8:1234:200:-1700000000123456789:1700000001000000000:100648:0:1000",
      "8:1234:200:-1700000000123456789:1700000001000000000:100644:0:4294968296",
      "8:1234:200:-1700000000123456789:1700000001000000000:100644:0:18446744073709552616",
      "8:1234:200:-1700000000123456789:1700000001000000000:100644:0:+1000",
      "8:1234:200:--1700000000123456789:1700000001000000000:100644:0:1000",
      "8:1234:200:-:1700000000123456789:1700000001000000000:100644:0:1000",
  };
  for (size_t i = 0; i < text.size(); ++i) {  // every character changed, or dropped
    std::string t = text;
    t[i] = t[i] == '9' ? '0' : (t[i] == ':' ? '1' : static_cast<char>(t[i] + 1));
    texts.push_back(t);
    texts.push_back(text.substr(0, i) + text.substr(i + 1));
  }
  const Fingerprint edges[] = {
      {},
      {UINT64_MAX, UINT64_MAX, UINT64_MAX, INT64_MAX, INT64_MIN, UINT32_MAX, UINT32_MAX,
       UINT32_MAX},
  };
  for (const auto& e : edges) {
    texts.push_back(e.str());
    EXPECT_TRUE(e.is(e.str()));
  }
  texts.push_back("0:0:0:-0:0:0:0:0");
  texts.push_back("0:0:0:9223372036854775808:0:0:0:0");   // past INT64_MAX
  texts.push_back("0:0:0:-9223372036854775809:0:0:0:0");  // past INT64_MIN
  texts.push_back("18446744073709551616:0:0:0:0:0:0:0");  // past UINT64_MAX
  // A text is this fingerprint exactly when it is its canonical text; whatever else
  // parses to the same (leading zeros, "-0") takes the slow path, never the fast one.
  for (const auto& t : texts)
    for (const auto& g : {f, edges[0], edges[1]}) {
      EXPECT_EQ(g.is(t), t == g.str()) << t << " against " << g.str();
      if (g.is(t)) {
        EXPECT_EQ(Fingerprint::parse(t), g) << t;
      }
    }
  EXPECT_EQ(Fingerprint::parse("0:0:0:-0:0:0:0:0"), edges[0]);
  EXPECT_FALSE(edges[0].is("0:0:0:-0:0:0:0:0"));
}

TEST_F(FsTest, FingerprintMovesWithAnyWrite) {
  atomicWrite(dir + "/f", "abc", 0600);
  auto before = Fingerprint::of(*lstatPath(dir + "/f"));
  ASSERT_EQ(::chmod((dir + "/f").c_str(), 0644), 0);
  EXPECT_NE(Fingerprint::of(*lstatPath(dir + "/f")), before);
}

TEST_F(FsTest, FreshlyWrittenFileIsRacy) {
  atomicWrite(dir + "/f", "abc", 0600);
  EXPECT_TRUE(fingerprintIsRacy(*lstatPath(dir + "/f")));
}

}  // namespace
}  // namespace mesh
