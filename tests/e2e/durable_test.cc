// What an apply makes durable is exactly what it wrote: an fsync of each file it
// wrote and of each directory it changed, never a syncfs or sync, which would
// write out every other program's unwritten data on the file system too. Read
// from the real syscalls (strace -y names each descriptor's path).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "harness.hh"

namespace mesh::e2e {
namespace {

class Durable : public Node {
 protected:
  struct Syncs {
    std::multiset<std::string>
        paths;  // fsync/fdatasync'd, relative to the root; state dir left out
    std::vector<std::string> wholeFs;  // syncfs, sync, sync_file_range lines
  };

  // `mesh-host apply decl` under strace: what it synced.
  Syncs appliedSyncing(const std::string& decl) {
    const std::string trace = work + "/syncs.trace";
    Result r = runCommand({"strace", "-f", "-qq", "-y", "-o", trace, "-e",
                           "trace=fsync,fdatasync,syncfs,sync,sync_file_range", MESH_HOST_BIN,
                           "apply", decl, "--root", root, "--blobs", blobs, "--node", "test"});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    Syncs s;
    static const std::regex call(R"((fsync|fdatasync)\(\d+<([^>]*)>)");
    std::ifstream in(trace);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_search(line, m, call)) {
        const std::string path = m[2];
        if (path.starts_with(stateDir())) continue;  // the store's own: SQLite, pages
        EXPECT_TRUE(path == root || path.starts_with(root + "/")) << line;
        s.paths.insert(path == root ? "/" : path.substr(root.size()));
      } else if (line.find("syncfs(") != std::string::npos ||
                 line.find(" sync(") != std::string::npos ||
                 line.find("sync_file_range(") != std::string::npos) {
        s.wholeFs.push_back(line);
      }
    }
    return s;
  }

  void SetUp() override {
    Node::SetUp();
    if (runCommand({"strace", "-V"}).code != 0) GTEST_SKIP() << "strace is not installed";
  }
};

// "/etc/app/.mesh-tmp.<16 hex>" -> "/etc/app/<tmp>"
std::multiset<std::string> tempsNamed(const std::multiset<std::string>& paths) {
  static const std::regex tmp(R"(\.mesh-tmp\.[0-9a-f]{16}$)");
  std::multiset<std::string> out;
  for (const auto& p : paths) out.insert(std::regex_replace(p, tmp, "<tmp>"));
  return out;
}

// The regression: every write of a cycle was made durable with a syncfs, which
// took 0.6 s beside 2 GiB of another program's dirty data, and flushed all of it.
TEST_F(Durable, AOneFileUpdateSyncsTheFileAndItsDirectoryAndNothingElse) {
  const std::string text = R"(node = "test"
[module.m.file.a]
path = "/etc/app/a.conf"
content = "VERSION\n"
[module.m.file.b]
path = "/etc/b.conf"
content = "b\n"
)";
  auto version = [&](const char* v) {
    return declare(std::regex_replace(text, std::regex("VERSION"), v));
  };
  ASSERT_EQ(apply(version("v1")).code, 0);
  const Syncs s = appliedSyncing(version("v2"));
  EXPECT_EQ(read("/etc/app/a.conf"), "v2\n");
  EXPECT_EQ(tempsNamed(s.paths), (std::multiset<std::string>{"/etc/app/<tmp>", "/etc/app"}));
  EXPECT_TRUE(s.wholeFs.empty()) << s.wholeFs.front();
}

TEST_F(Durable, DirectoriesMadeForAFileAreSyncedIntoTheirParents) {
  const Syncs s = appliedSyncing(declare(R"(node = "test"
[module.m.file.a]
path = "/srv/x/y/a.conf"
content = "a\n"
)"));
  EXPECT_EQ(read("/srv/x/y/a.conf"), "a\n");
  EXPECT_EQ(tempsNamed(s.paths),
            (std::multiset<std::string>{"/srv/x/y/<tmp>", "/srv/x/y", "/srv/x", "/srv", "/"}));
  EXPECT_TRUE(s.wholeFs.empty()) << s.wholeFs.front();
}

TEST_F(Durable, ABatchSyncsEachFileOnceAndEachDirectoryOnce) {
  std::string text = "node = \"test\"\n";
  for (int i = 0; i < 60; ++i)
    text += fmt::format("[module.m.file.f{0}]\npath = \"/etc/d{1}/f{0}\"\ncontent = \"{0}\\n\"\n",
                        i, i % 3);
  std::filesystem::create_directories(at("/etc/d0"));
  std::filesystem::create_directories(at("/etc/d1"));
  std::filesystem::create_directories(at("/etc/d2"));
  const Syncs s = appliedSyncing(declare(text));
  std::set<std::string> temps;
  std::multiset<std::string> dirs;
  for (const auto& p : s.paths) {
    if (p.find("/.mesh-tmp.") != std::string::npos)
      temps.insert(p);
    else
      dirs.insert(p);
  }
  EXPECT_EQ(temps.size(), 60u);
  EXPECT_EQ(s.paths.size(), 63u) << "a file or directory synced twice";
  EXPECT_EQ(dirs, (std::multiset<std::string>{"/etc/d0", "/etc/d1", "/etc/d2"}));
  EXPECT_TRUE(s.wholeFs.empty()) << s.wholeFs.front();
  for (int i = 0; i < 60; ++i)
    EXPECT_EQ(read(fmt::format("/etc/d{}/f{}", i % 3, i)), fmt::format("{}\n", i));
}

TEST_F(Durable, AnArchiveIsSyncedEntryByEntryNeverTheFileSystem) {
  const std::string site = publish(makeArchive(
      {{"index.html", "<p>site</p>\n"}, {"css/site.css", "p {}\n"}}, "tar -cf out index.html css"));
  std::filesystem::create_directories(at("/opt"));
  const Syncs s = appliedSyncing(declare(fmt::format(R"(node = "test"
[module.m.archive.site]
path = "/opt/site"
bundle = "{}"
)",
                                                     site)));
  EXPECT_EQ(read("/opt/site/css/site.css"), "p {}\n");
  static const std::regex unpack(R"(/opt/\.mesh-new\.[0-9a-f]{16})");
  std::multiset<std::string> named;
  for (const auto& p : s.paths) named.insert(std::regex_replace(p, unpack, "/opt/<new>"));
  EXPECT_EQ(named, (std::multiset<std::string>{"/opt/<new>/index.html", "/opt/<new>/css/site.css",
                                               "/opt/<new>/css", "/opt/<new>", "/opt"}));
  EXPECT_TRUE(s.wholeFs.empty()) << s.wholeFs.front();
}

}  // namespace
}  // namespace mesh::e2e
