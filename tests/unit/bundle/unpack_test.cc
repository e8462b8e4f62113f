// unpack() and readManifest() on well-formed archives made by real tools.
#include "bundle/unpack.hh"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "test_util.hh"
#include "util/error.hh"

namespace mesh::bundle {
namespace {

using test::sh;
using test::TempDir;

const Entry* find(const Manifest& m, const std::string& path) {
  for (const auto& e : m.entries)
    if (e.path == path) return &e;
  return nullptr;
}

mode_t modeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// A source tree with every kind of entry a bundle may hold.
void makeTree(const std::string& src) {
  test::writeText(src + "/bin/tool", "#!/bin/sh\necho tool\n", 0755);
  test::writeText(src + "/etc/conf", "key = 1\n", 0640);
  test::writeText(src + "/etc/empty", "", 0600);
  sh("ln -s conf " + src + "/etc/link");
  sh("ln -s ../etc " + src + "/bin/etc-dir");
  sh("mkdir -p -m 0750 " + src + "/var/empty");
  sh("chmod 0750 " + src + "/var/empty");
}

struct Format {
  const char* name;
  const char* file;
  const char* command;  // %s: the source dir, %o: the archive
  bool hardLinks;
};

class GoodArchive : public ::testing::TestWithParam<Format> {
 protected:
  void SetUp() override {
    src = tmp.path + "/src";
    makeTree(src);
    if (GetParam().hardLinks) sh("ln " + src + "/bin/tool " + src + "/bin/tool2");
    archive = tmp.path + "/" + GetParam().file;
    std::string cmd = GetParam().command;
    cmd.replace(cmd.find("%s"), 2, src);
    cmd.replace(cmd.find("%o"), 2, archive);
    sh(cmd);
  }
  TempDir tmp;
  std::string src, archive;
};

TEST_P(GoodArchive, UnpacksExactly) {
  const std::string dest = tmp.path + "/out/dest";
  Manifest m = unpack(archive, dest, {});

  EXPECT_EQ(modeOf(dest), 0755u);
  EXPECT_EQ(test::readText(dest + "/bin/tool"), "#!/bin/sh\necho tool\n");
  EXPECT_EQ(test::readText(dest + "/etc/conf"), "key = 1\n");
  EXPECT_EQ(modeOf(dest + "/bin/tool"), 0755u);
  EXPECT_EQ(modeOf(dest + "/etc/conf"), 0640u);
  EXPECT_EQ(modeOf(dest + "/etc/empty"), 0600u);
  EXPECT_EQ(modeOf(dest + "/var/empty"), 0750u);
  EXPECT_EQ(std::filesystem::read_symlink(dest + "/etc/link").string(), "conf");

  std::vector<std::string> paths;
  for (const auto& e : m.entries) paths.push_back(e.path);
  std::vector<std::string> want = {"bin",       "bin/etc-dir", "bin/tool", "etc",      "etc/conf",
                                   "etc/empty", "etc/link",    "var",      "var/empty"};
  if (GetParam().hardLinks) want.insert(want.begin() + 3, "bin/tool2");
  EXPECT_EQ(paths, want);

  const Entry* tool = find(m, "bin/tool");
  ASSERT_TRUE(tool);
  EXPECT_EQ(tool->type, Entry::Type::File);
  EXPECT_EQ(tool->mode, 0755u);
  EXPECT_EQ(tool->size, 20u);
  EXPECT_EQ(tool->content, Digest::ofBytes("#!/bin/sh\necho tool\n"));
  EXPECT_EQ(find(m, "etc/empty")->content, Digest::ofBytes(""));
  EXPECT_EQ(find(m, "etc")->type, Entry::Type::Directory);
  EXPECT_EQ(find(m, "var/empty")->mode, 0750u);
  const Entry* link = find(m, "bin/etc-dir");
  ASSERT_TRUE(link);
  EXPECT_EQ(link->type, Entry::Type::Symlink);
  EXPECT_EQ(link->target, "../etc");
  EXPECT_EQ(m.files(), GetParam().hardLinks ? 4u : 3u);

  if (GetParam().hardLinks) {
    const Entry* tool2 = find(m, "bin/tool2");
    ASSERT_TRUE(tool2);
    EXPECT_EQ(tool2->type, Entry::Type::File);
    EXPECT_EQ(tool2->content, tool->content);
    EXPECT_EQ(tool2->mode, tool->mode);
    struct stat a {
    }, b{};
    ASSERT_EQ(::lstat((dest + "/bin/tool").c_str(), &a), 0);
    ASSERT_EQ(::lstat((dest + "/bin/tool2").c_str(), &b), 0);
    EXPECT_EQ(a.st_ino, b.st_ino);
  }

  EXPECT_EQ(readManifest(archive, {}).entries, m.entries);
  EXPECT_EQ(verify(dest, m), std::nullopt);
}

INSTANTIATE_TEST_SUITE_P(
    Formats, GoodArchive,
    ::testing::Values(Format{"tar", "b.tar", "tar -C %s -cf %o .", true},
                      Format{"targz", "b.tar.gz", "tar -C %s -czf %o bin etc var", true},
                      Format{"tarzst", "b.tar.zst", "tar -C %s --zstd -cf %o .", true},
                      Format{"zip", "b.zip", "cd %s && zip -qry --symlinks %o .", false}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Unpack, DropsSetuidAndSetgid) {
  TempDir tmp;
  const std::string src = tmp.path + "/src";
  test::writeText(src + "/suid", "x", 0644);
  sh("chmod 4755 " + src + "/suid");
  test::writeText(src + "/sgid", "y", 0644);
  sh("chmod 2711 " + src + "/sgid");
  sh("mkdir " + src + "/shared && chmod 3775 " + src + "/shared");
  sh("tar -C " + src + " -cf " + tmp.path + "/b.tar .");
  Manifest m = unpack(tmp.path + "/b.tar", tmp.path + "/dest", {});
  EXPECT_EQ(modeOf(tmp.path + "/dest/suid"), 0755u);
  EXPECT_EQ(modeOf(tmp.path + "/dest/sgid"), 0711u);
  EXPECT_EQ(modeOf(tmp.path + "/dest/shared"), 01775u);  // sticky kept, setgid dropped
  EXPECT_EQ(find(m, "suid")->mode, 0755u);
  EXPECT_EQ(find(m, "shared")->mode, 01775u);
}

TEST(Unpack, ReadOnlyDirectoriesStillGetTheirChildren) {
  TempDir tmp;
  const std::string archive = tmp.path + "/b.tar";
  test::craftTar(archive, {{test::Crafted::Dir, "ro", "", 0555},
                           {test::Crafted::File, "ro/f", "data", 0444},
                           {test::Crafted::Dir, "ro/sub", "", 0500},
                           {test::Crafted::File, "ro/sub/g", "more", 0400}});
  Manifest m = unpack(archive, tmp.path + "/dest", {});
  EXPECT_EQ(modeOf(tmp.path + "/dest/ro"), 0555u);
  EXPECT_EQ(modeOf(tmp.path + "/dest/ro/sub"), 0500u);
  EXPECT_EQ(test::readText(tmp.path + "/dest/ro/sub/g"), "more");
  EXPECT_EQ(verify(tmp.path + "/dest", m), std::nullopt);
}

TEST(Unpack, MakesMissingParentsAndRepeatedDirectoriesRestateTheirMode) {
  TempDir tmp;
  const std::string archive = tmp.path + "/b.tar";
  test::craftTar(archive, {{test::Crafted::File, "a/b/c", "deep", 0644},
                           {test::Crafted::Dir, "a/", "", 0700},
                           {test::Crafted::Dir, "./a", "", 0750}});
  Manifest m = unpack(archive, tmp.path + "/dest", {});
  ASSERT_EQ(m.entries.size(), 3u);
  EXPECT_EQ(m.entries[0].path, "a");
  EXPECT_EQ(m.entries[0].mode, 0750u);
  EXPECT_EQ(m.entries[1].path, "a/b");
  EXPECT_EQ(m.entries[1].type, Entry::Type::Directory);
  EXPECT_EQ(m.entries[1].mode, 0755u);
  EXPECT_EQ(modeOf(tmp.path + "/dest/a"), 0750u);
  EXPECT_EQ(modeOf(tmp.path + "/dest/a/b"), 0755u);
}

TEST(Unpack, LinksThroughLinksThatStayInsideAreFine) {
  TempDir tmp;
  const std::string archive = tmp.path + "/b.tar";
  test::craftTar(archive, {{test::Crafted::Dir, "a/b", "", 0755},
                           {test::Crafted::Symlink, "a/b/up", "..", 0777},
                           {test::Crafted::Symlink, "a/b/top", "up/..", 0777},
                           {test::Crafted::Symlink, "dangling", "not/there", 0777}});
  Manifest m = unpack(archive, tmp.path + "/dest", {});
  EXPECT_EQ(m.entries.size(), 5u);
}

TEST(Unpack, RefusesAnExistingDestinationAndLeavesItAlone) {
  TempDir tmp;
  test::craftTar(tmp.path + "/b.tar", {{test::Crafted::File, "f", "x", 0644}});
  test::writeText(tmp.path + "/dest/keep", "mine");
  try {
    unpack(tmp.path + "/b.tar", tmp.path + "/dest", {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already exists"), std::string::npos) << e.what();
  }
  EXPECT_EQ(test::readText(tmp.path + "/dest/keep"), "mine");
}

TEST(Unpack, RefusesGarbageAndMissingArchives) {
  TempDir tmp;
  test::writeText(tmp.path + "/junk.tar", std::string(4096, 'z'));
  EXPECT_THROW(unpack(tmp.path + "/junk.tar", tmp.path + "/dest", {}), Error);
  EXPECT_FALSE(test::exists(tmp.path + "/dest"));
  EXPECT_THROW(unpack(tmp.path + "/nope.tar", tmp.path + "/dest", {}), Error);
  EXPECT_FALSE(test::exists(tmp.path + "/dest"));
  EXPECT_THROW(readManifest(tmp.path + "/junk.tar", {}), Error);
}

TEST(Unpack, TruncatedArchiveIsRefused) {
  TempDir tmp;
  test::writeText(tmp.path + "/src/big", std::string(100000, 'q'));
  sh("tar -C " + tmp.path + "/src -cf " + tmp.path + "/b.tar big");
  sh("truncate -s 20000 " + tmp.path + "/b.tar");
  EXPECT_THROW(unpack(tmp.path + "/b.tar", tmp.path + "/dest", {}), Error);
  EXPECT_FALSE(test::exists(tmp.path + "/dest"));
}

TEST(Unpack, SparseFileHashesItsHoles) {
  TempDir tmp;
  const std::string src = tmp.path + "/src";
  sh("mkdir -p " + src + " && truncate -s 1M " + src + "/sparse && printf x >> " + src + "/sparse");
  sh("tar -C " + src + " --sparse -cf " + tmp.path + "/b.tar sparse");
  Manifest m = unpack(tmp.path + "/b.tar", tmp.path + "/dest", {});
  ASSERT_EQ(m.entries.size(), 1u);
  EXPECT_EQ(m.entries[0].size, (1u << 20) + 1);
  EXPECT_EQ(m.entries[0].content, Digest::ofFile(src + "/sparse"));
  EXPECT_EQ(Digest::ofFile(tmp.path + "/dest/sparse"), m.entries[0].content);
}

}  // namespace
}  // namespace mesh::bundle
