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
  std::filesystem::create_directories(tmp.path + "/out");
  Manifest m = test::unpackTo(archive, dest, {});

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
  EXPECT_EQ(test::verifyAt(dest, m), std::nullopt);
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
  Manifest m = test::unpackTo(tmp.path + "/b.tar", tmp.path + "/dest", {});
  EXPECT_EQ(modeOf(tmp.path + "/dest/suid"), 0755u);
  EXPECT_EQ(modeOf(tmp.path + "/dest/sgid"), 0711u);
  // Sticky kept; setgid dropped, and group write (no keep-modes).
  EXPECT_EQ(modeOf(tmp.path + "/dest/shared"), 01755u);
  EXPECT_EQ(find(m, "suid")->mode, 0755u);
  EXPECT_EQ(find(m, "shared")->mode, 01755u);
  Manifest kept = test::unpackTo(tmp.path + "/b.tar", tmp.path + "/kept", {.keepModes = true});
  EXPECT_EQ(modeOf(tmp.path + "/kept/shared"), 01775u);
  EXPECT_EQ(modeOf(tmp.path + "/kept/suid"), 0755u);  // setuid goes whatever keep-modes says
  EXPECT_EQ(find(kept, "shared")->mode, 01775u);
}

TEST(Unpack, ReadOnlyDirectoriesStillGetTheirChildren) {
  TempDir tmp;
  const std::string archive = tmp.path + "/b.tar";
  test::craftTar(archive, {{test::Crafted::Dir, "ro", "", 0555},
                           {test::Crafted::File, "ro/f", "data", 0444},
                           {test::Crafted::Dir, "ro/sub", "", 0500},
                           {test::Crafted::File, "ro/sub/g", "more", 0400}});
  Manifest m = test::unpackTo(archive, tmp.path + "/dest", {});
  EXPECT_EQ(modeOf(tmp.path + "/dest/ro"), 0555u);
  EXPECT_EQ(modeOf(tmp.path + "/dest/ro/sub"), 0500u);
  EXPECT_EQ(test::readText(tmp.path + "/dest/ro/sub/g"), "more");
  EXPECT_EQ(test::verifyAt(tmp.path + "/dest", m), std::nullopt);
}

TEST(Unpack, MakesMissingParentsAndRepeatedDirectoriesRestateTheirMode) {
  TempDir tmp;
  const std::string archive = tmp.path + "/b.tar";
  test::craftTar(archive, {{test::Crafted::File, "a/b/c", "deep", 0644},
                           {test::Crafted::Dir, "a/", "", 0700},
                           {test::Crafted::Dir, "./a", "", 0750}});
  Manifest m = test::unpackTo(archive, tmp.path + "/dest", {});
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
  Manifest m = test::unpackTo(archive, tmp.path + "/dest", {});
  EXPECT_EQ(m.entries.size(), 5u);
}

TEST(Unpack, RefusesAnExistingDestinationAndLeavesItAlone) {
  TempDir tmp;
  test::craftTar(tmp.path + "/b.tar", {{test::Crafted::File, "f", "x", 0644}});
  test::writeText(tmp.path + "/dest/keep", "mine");
  try {
    test::unpackTo(tmp.path + "/b.tar", tmp.path + "/dest", {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already exists"), std::string::npos) << e.what();
  }
  EXPECT_EQ(test::readText(tmp.path + "/dest/keep"), "mine");
}

TEST(Unpack, RefusesGarbageAndMissingArchives) {
  TempDir tmp;
  test::writeText(tmp.path + "/junk.tar", std::string(4096, 'z'));
  EXPECT_THROW(test::unpackTo(tmp.path + "/junk.tar", tmp.path + "/dest", {}), Error);
  EXPECT_FALSE(test::exists(tmp.path + "/dest"));
  EXPECT_THROW(test::unpackTo(tmp.path + "/nope.tar", tmp.path + "/dest", {}), Error);
  EXPECT_FALSE(test::exists(tmp.path + "/dest"));
  EXPECT_THROW(readManifest(tmp.path + "/junk.tar", {}), Error);
}

TEST(Unpack, TruncatedArchiveIsRefused) {
  TempDir tmp;
  test::writeText(tmp.path + "/src/big", std::string(100000, 'q'));
  sh("tar -C " + tmp.path + "/src -cf " + tmp.path + "/b.tar big");
  sh("truncate -s 20000 " + tmp.path + "/b.tar");
  EXPECT_THROW(test::unpackTo(tmp.path + "/b.tar", tmp.path + "/dest", {}), Error);
  EXPECT_FALSE(test::exists(tmp.path + "/dest"));
}

TEST(Unpack, SparseFileHashesItsHoles) {
  TempDir tmp;
  const std::string src = tmp.path + "/src";
  sh("mkdir -p " + src + " && truncate -s 1M " + src + "/sparse && printf x >> " + src + "/sparse");
  sh("tar -C " + src + " --sparse -cf " + tmp.path + "/b.tar sparse");
  Manifest m = test::unpackTo(tmp.path + "/b.tar", tmp.path + "/dest", {});
  ASSERT_EQ(m.entries.size(), 1u);
  EXPECT_EQ(m.entries[0].size, (1u << 20) + 1);
  EXPECT_EQ(m.entries[0].content, Digest::ofFile(src + "/sparse"));
  EXPECT_EQ(Digest::ofFile(tmp.path + "/dest/sparse"), m.entries[0].content);
}

// Modes from a real tar: group and world write go unless keep-modes says so, in
// the tree and the manifest alike (so verify() does not see them differ).
TEST(Unpack, DropsGroupAndWorldWriteUnlessKeepModes) {
  TempDir tmp;
  const std::string src = tmp.path + "/src";
  test::writeText(src + "/open/all", "x", 0644);
  test::writeText(src + "/gw", "y", 0644);
  sh("chmod 0777 " + src + "/open " + src + "/open/all && chmod 0664 " + src + "/gw");
  sh("tar -C " + src + " -cf " + tmp.path + "/b.tar open gw");
  for (bool keep : {false, true}) {
    SCOPED_TRACE(keep ? "keep-modes" : "default");
    const std::string dest = tmp.path + (keep ? "/kept" : "/dropped");
    const Limits limits{.keepModes = keep};
    Manifest m = test::unpackTo(tmp.path + "/b.tar", dest, limits);
    EXPECT_EQ(modeOf(dest + "/open"), keep ? 0777u : 0755u);
    EXPECT_EQ(modeOf(dest + "/open/all"), keep ? 0777u : 0755u);
    EXPECT_EQ(modeOf(dest + "/gw"), keep ? 0664u : 0644u);
    EXPECT_EQ(find(m, "open")->mode, keep ? 0777u : 0755u);
    EXPECT_EQ(find(m, "open/all")->mode, keep ? 0777u : 0755u);
    EXPECT_EQ(readManifest(tmp.path + "/b.tar", limits).entries, m.entries);
    EXPECT_EQ(test::verifyAt(dest, m), std::nullopt);
  }
}

// The destination is (directory descriptor, name): what the descriptor names,
// not what the path names now.
TEST(UnpackAt, WritesThroughTheDescriptorNotThePath) {
  TempDir tmp;
  test::craftTar(tmp.path + "/b.tar", {{test::Crafted::File, "f", "data", 0644}});
  std::filesystem::create_directories(tmp.path + "/parent");
  std::filesystem::create_directories(tmp.path + "/elsewhere");
  Fd parent = test::openDir(tmp.path + "/parent");
  // The parent's path is swapped for a link after it was opened.
  std::filesystem::rename(tmp.path + "/parent", tmp.path + "/moved");
  std::filesystem::create_directory_symlink("elsewhere", tmp.path + "/parent");
  Manifest m = unpack(tmp.path + "/b.tar", parent.get(), "tree", {});
  EXPECT_EQ(test::readText(tmp.path + "/moved/tree/f"), "data");
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path + "/elsewhere"));
  EXPECT_EQ(verify(test::openDir(tmp.path + "/moved/tree").get(), m).difference, std::nullopt);
}

// A watcher hears how much of the archive (compressed, as on disk) has been read, in
// order, up to all of it, under "unpacking <shown>".
TEST(UnpackAt, TellsHowFarItHasReadTheArchive) {
  TempDir tmp;
  sh("mkdir -p " + tmp.path + "/src && head -c 3000000 /dev/urandom > " + tmp.path +
     "/src/big && tar -C " + tmp.path + "/src -czf " + tmp.path + "/b.tar.gz .");
  Fd parent = test::openDir(tmp.path);
  struct stat st {};
  ASSERT_EQ(::stat((tmp.path + "/b.tar.gz").c_str(), &st), 0);
  std::vector<std::pair<uint64_t, uint64_t>> heard;
  std::string what;
  const ByteProgress watch = [&](std::string_view w, uint64_t done, uint64_t total) {
    what = w;
    heard.emplace_back(done, total);
  };
  unpack(tmp.path + "/b.tar.gz", parent.get(), "tree", {}, "/opt/app", watch);
  EXPECT_EQ(what, "unpacking /opt/app");
  ASSERT_GT(heard.size(), 2u) << "a 3 MB archive is read in many blocks";
  for (size_t i = 1; i < heard.size(); ++i) EXPECT_GE(heard[i].first, heard[i - 1].first);
  for (const auto& [done, total] : heard) EXPECT_EQ(total, static_cast<uint64_t>(st.st_size));
  EXPECT_EQ(heard.back().first, static_cast<uint64_t>(st.st_size));
}

TEST(UnpackAt, RefusesALinkPlantedAtTheNameAndWritesNothingThrough) {
  TempDir tmp;
  test::craftTar(tmp.path + "/b.tar", {{test::Crafted::File, "f", "data", 0644}});
  std::filesystem::create_directories(tmp.path + "/outside");
  std::filesystem::create_directory_symlink(tmp.path + "/outside", tmp.path + "/tree");
  try {
    test::unpackTo(tmp.path + "/b.tar", tmp.path + "/tree", {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already exists"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path + "/outside"));
  EXPECT_TRUE(std::filesystem::is_symlink(tmp.path + "/tree"));  // not removed by the cleanup
}

TEST(UnpackAt, NameIsOneComponentAndMayBeNameMaxLong) {
  TempDir tmp;
  test::craftTar(tmp.path + "/b.tar", {{test::Crafted::File, "f", "data", 0644}});
  Fd dir = test::openDir(tmp.path);
  for (const char* bad : {"a/b", "", ".", ".."})
    EXPECT_THROW(unpack(tmp.path + "/b.tar", dir.get(), bad, {}), Error) << bad;
  const std::string longName(255, 'n');
  unpack(tmp.path + "/b.tar", dir.get(), longName, {});
  EXPECT_EQ(test::readText(tmp.path + "/" + longName + "/f"), "data");
}

TEST(UnpackAt, FailureNamesTheShownPathAndRemovesTheTree) {
  TempDir tmp;
  test::craftTar(tmp.path + "/b.tar", {{test::Crafted::File, "ok", "fine", 0644},
                                       {test::Crafted::Fifo, "pipe", "", 0644}});
  Fd dir = test::openDir(tmp.path);
  EXPECT_THROW(unpack(tmp.path + "/b.tar", dir.get(), ".mesh-new.x", {}, "/srv/app"), Error);
  EXPECT_FALSE(test::exists(tmp.path + "/.mesh-new.x"));
  std::filesystem::create_directories(tmp.path + "/.mesh-new.x");
  try {
    unpack(tmp.path + "/b.tar", dir.get(), ".mesh-new.x", {}, "/srv/app");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot unpack into /srv/app: it already exists"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace mesh::bundle
