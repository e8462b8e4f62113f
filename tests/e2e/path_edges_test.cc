// Edges of declared paths: names of exactly NAME_MAX (255) bytes for every kind that
// writes at a path (temp names beside them must not grow past the limit), and parents that
// do not exist, created 0755 root:root whatever the umask mesh-host runs under.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

class PathEdges : public Node {
 protected:
  // mesh-host apply --json, run by a shell that set `umask` first.
  Result applyUnderUmask(const std::string& decl, const std::string& umask) {
    return runCommand({"sh", "-c", fmt::format("umask {}; exec \"$@\"", umask), "sh", MESH_HOST_BIN,
                       "apply", decl, "--json", "--root", root, "--blobs", blobs, "--node",
                       "test"});
  }

  void expectAllUnchanged(const Result& r, size_t count) {
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto j = r.json();
    EXPECT_EQ(j["outcomes"].size(), count) << r.out;
    for (const auto& o : j["outcomes"]) EXPECT_EQ(o["outcome"], "unchanged") << o.dump();
  }
};

TEST_F(PathEdges, NamesOf255Bytes) {
  const std::string f(255, 'f'), l(255, 'l'), c(255, 'c'), d(255, 'd'), a(255, 'a');
  ASSERT_EQ(f.size(), 255u);
  const std::string secret = work + "/secret";
  std::ofstream(secret) << "long-name-secret";
  const std::string bundle =
      publish(makeArchive({{"index.html", "<p>long</p>\n"}}, "tar -cf out index.html"));
  const std::string decl = declare(fmt::format(R"(
[module.edge.file.file]
path = "/etc/edge/{f}"
content = "a file with a long name\n"

[module.edge.link.link]
path = "/etc/edge/{l}"
target = "{f}"

[module.edge.credential.key]
path = "/etc/edge/{c}"
from = "{secret}"

[module.edge.directory.dir]
path = "/etc/edge/{d}"
mode = "0750"

[module.edge.archive.site]
path = "/etc/edge/{a}"
bundle = "{bundle}"
)",
                                               fmt::arg("f", f), fmt::arg("l", l), fmt::arg("c", c),
                                               fmt::arg("d", d), fmt::arg("secret", secret),
                                               fmt::arg("a", a), fmt::arg("bundle", bundle)));
  Result r = apply(decl);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const char* id : {"edge.file", "edge.link", "edge.key", "edge.dir", "edge.site"}) {
    const auto o = outcomeOf(r.json(), id);
    EXPECT_EQ(o["outcome"], "created") << o.dump();
  }
  EXPECT_EQ(read("/etc/edge/" + f), "a file with a long name\n");
  EXPECT_EQ(fs::read_symlink(at("/etc/edge/" + l)).string(), f);
  EXPECT_EQ(read("/etc/edge/" + c), "long-name-secret");
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(at("/etc/edge/" + d))));
  EXPECT_EQ(read("/etc/edge/" + a + "/index.html"), "<p>long</p>\n");
  // Nothing else is left beside them: no temp file of a write.
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(at("/etc/edge")))
    names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{f, l, c, d, a}));

  expectAllUnchanged(apply(decl), 5);
}

TEST_F(PathEdges, MissingParentsAre0755RootUnderUmask077) {
  const std::string secret = work + "/secret";
  std::ofstream(secret) << "umask-secret";
  const std::string bundle =
      publish(makeArchive({{"index.html", "<p>deep</p>\n"}}, "tar -cf out index.html"));
  const std::string decl = declare(fmt::format(R"(
[module.deep.file.file]
path = "/opt/deep/a/b/file"
content = "deep\n"

[module.deep.link.link]
path = "/opt/deep/l/m/link"
target = "/opt/deep/a/b/file"

[module.deep.credential.key]
path = "/opt/deep/k/key"
from = "{}"

[module.deep.directory.dir]
path = "/opt/deep/d/e/dir"
mode = "0750"

[module.deep.archive.site]
path = "/opt/deep/w/site"
bundle = "{}"
)",
                                               secret, bundle));
  Result r = applyUnderUmask(decl, "077");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto report = r.json();  // held: a range over a temporary's member dangles
  for (const auto& o : report["outcomes"]) EXPECT_EQ(o["outcome"], "created") << o.dump();

  for (const char* parent :
       {"/opt", "/opt/deep", "/opt/deep/a", "/opt/deep/a/b", "/opt/deep/l", "/opt/deep/l/m",
        "/opt/deep/k", "/opt/deep/d", "/opt/deep/d/e", "/opt/deep/w"}) {
    struct stat st {};
    ASSERT_EQ(::lstat(at(parent).c_str(), &st), 0) << parent;
    EXPECT_TRUE(S_ISDIR(st.st_mode)) << parent;
    EXPECT_EQ(st.st_mode & 07777, 0755u) << parent;
    if (::geteuid() == 0) {
      EXPECT_EQ(st.st_uid, 0u) << parent;
      EXPECT_EQ(st.st_gid, 0u) << parent;
    }
  }
  // What is declared has the declared (or default) mode, not the umask's.
  const std::pair<const char*, mode_t> declared[] = {
      {"/opt/deep/a/b/file", 0644}, {"/opt/deep/k/key", 0600}, {"/opt/deep/d/e/dir", 0750}};
  for (const auto& [path, mode] : declared) {
    struct stat st {};
    ASSERT_EQ(::lstat(at(path).c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_mode & 07777, mode) << path;
  }
  EXPECT_EQ(read("/opt/deep/w/site/index.html"), "<p>deep</p>\n");

  expectAllUnchanged(applyUnderUmask(decl, "077"), 5);
}

}  // namespace
}  // namespace mesh::e2e
