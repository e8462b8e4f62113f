// A resource whose path or kind changes converges in one cycle: what mesh-host
// wrote at the old path (or as the old kind) goes — the same rule as pruning,
// so anything someone changed since stays — and plan says so beforehand.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

class PathChange : public Node {
 protected:
  // Applies and expects exit 0; returns the report.
  nlohmann::json applyOk(const std::string& decl) {
    Result r = apply(decl);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    return r.json();
  }
  void expectAllUnchanged(const std::string& decl) {
    auto j = applyOk(decl);
    EXPECT_EQ(j["summary"]["created"], 0) << j.dump(2);
    EXPECT_EQ(j["summary"]["updated"], 0) << j.dump(2);
    EXPECT_EQ(j["summary"]["removed"], 0) << j.dump(2);
    EXPECT_EQ(j["summary"]["failed"], 0) << j.dump(2);
  }
  static std::string fileAt(const std::string& id, const std::string& path,
                            const std::string& content = "x = 1\n") {
    auto dot = id.find('.');
    return fmt::format("[module.{}.file.{}]\npath = \"{}\"\ncontent = \"{}\"\n", id.substr(0, dot),
                       id.substr(dot + 1), path, content == "x = 1\n" ? "x = 1\\n" : content);
  }
  bool exists(const std::string& declared) const {
    struct stat st {};
    return ::lstat(at(declared).c_str(), &st) == 0;
  }
};

TEST_F(PathChange, AMovedFileLeavesNothingAtItsOldPath) {
  applyOk(declare(fileAt("m.f", "/srv/a/conf")));
  ASSERT_TRUE(exists("/srv/a/conf"));
  const auto moved = declare(fileAt("m.f", "/srv/b/conf"), "moved.toml");

  Result p = plan(moved);
  EXPECT_EQ(p.code, 3) << p.out << p.err;
  EXPECT_NE(p.out.find("would move m.f (m) /srv/a/conf -> /srv/b/conf"), std::string::npos)
      << p.out;
  EXPECT_EQ(p.out.find("drift"), std::string::npos) << p.out;
  EXPECT_TRUE(exists("/srv/a/conf"));  // a plan moves nothing

  auto j = applyOk(moved);
  auto o = outcomeOf(j, "m.f");
  EXPECT_EQ(o["outcome"], "updated") << o.dump();
  EXPECT_EQ(o["reason"], "moved from /srv/a/conf") << o.dump();
  EXPECT_NE(o["detail"].get<std::string>().find("old path deleted"), std::string::npos) << o.dump();
  EXPECT_FALSE(exists("/srv/a/conf"));
  EXPECT_EQ(read("/srv/b/conf"), "x = 1\n");
  expectAllUnchanged(moved);
}

TEST_F(PathChange, AMovedCredentialLeavesNoPlaintextCopyBehind) {
  const std::string secret = work + "/secret";
  std::ofstream(secret) << "s3cr3t-value";
  auto decl = [&](const std::string& path) {
    return fmt::format("[module.m.credential.key]\npath = \"{}\"\nfrom = \"{}\"\n", path, secret);
  };
  applyOk(declare(decl("/etc/m/key")));
  ASSERT_TRUE(exists("/etc/m/key"));
  const auto moved = declare(decl("/etc/m/key2"), "moved.toml");
  auto o = outcomeOf(applyOk(moved), "m.key");
  EXPECT_EQ(o["reason"], "moved from /etc/m/key") << o.dump();
  EXPECT_FALSE(exists("/etc/m/key"));
  EXPECT_EQ(read("/etc/m/key2"), "s3cr3t-value");
  expectAllUnchanged(moved);
}

TEST_F(PathChange, AnOldPathSomeoneChangedStaysInPlace) {
  applyOk(declare(fileAt("m.f", "/srv/a/conf")));
  write("/srv/a/conf", "edited by hand\n");
  const auto moved = declare(fileAt("m.f", "/srv/b/conf"), "moved.toml");
  auto o = outcomeOf(applyOk(moved), "m.f");
  EXPECT_EQ(o["outcome"], "updated") << o.dump();
  EXPECT_NE(o["detail"].get<std::string>().find("modified since mesh-host wrote it"),
            std::string::npos)
      << o.dump();
  EXPECT_EQ(read("/srv/a/conf"), "edited by hand\n");
  expectAllUnchanged(moved);
}

TEST_F(PathChange, AnOldPathAnotherResourceNowDeclaresIsLeftToIt) {
  applyOk(declare(fileAt("m.f", "/srv/a/conf")));
  const auto swapped =
      declare(fileAt("m.f", "/srv/b/conf") + fileAt("m.g", "/srv/a/conf", "y = 2\\n"), "s.toml");
  auto j = applyOk(swapped);
  EXPECT_NE(outcomeOf(j, "m.f")["detail"].get<std::string>().find("now managed by m.g"),
            std::string::npos)
      << j.dump(2);
  EXPECT_EQ(read("/srv/a/conf"), "y = 2\n");
  EXPECT_EQ(read("/srv/b/conf"), "x = 1\n");
  expectAllUnchanged(swapped);
}

TEST_F(PathChange, FileToDirectoryUnderTheSameIdConvergesInOneCycle) {
  applyOk(declare(fileAt("m.x", "/srv/x")));
  const auto dir =
      declare("[module.m.directory.x]\npath = \"/srv/x\"\nmode = \"0750\"\n", "d.toml");
  Result p = plan(dir);
  EXPECT_EQ(p.code, 3) << p.out << p.err;
  EXPECT_NE(p.out.find("would update m.x (m): mode 0750: kind changed: file -> directory"),
            std::string::npos)
      << p.out;
  auto o = outcomeOf(applyOk(dir), "m.x");
  EXPECT_EQ(o["outcome"], "updated") << o.dump();
  EXPECT_EQ(o["reason"], "kind changed: file -> directory") << o.dump();
  EXPECT_TRUE(fs::is_directory(at("/srv/x")));
  expectAllUnchanged(dir);
}

TEST_F(PathChange, FileToLinkUnderANewIdConvergesInOneCycle) {
  applyOk(declare(fileAt("m.f", "/srv/x")));
  const auto link = declare("[module.m.link.l]\npath = \"/srv/x\"\ntarget = \"/elsewhere\"\n");
  auto j = applyOk(link);
  EXPECT_EQ(outcomeOf(j, "m.l")["outcome"], "updated") << j.dump(2);
  EXPECT_EQ(outcomeOf(j, "m.l")["reason"], "replaces the file of m.f") << j.dump(2);
  EXPECT_TRUE(fs::is_symlink(at("/srv/x")));
  expectAllUnchanged(link);
}

TEST_F(PathChange, DirectoryToFileUnderTheSameIdConvergesInOneCycle) {
  applyOk(declare("[module.m.directory.x]\npath = \"/srv/x\"\n", "d.toml"));
  ASSERT_TRUE(fs::is_directory(at("/srv/x")));
  const auto file = declare(fileAt("m.x", "/srv/x"), "f.toml");
  auto o = outcomeOf(applyOk(file), "m.x");
  EXPECT_EQ(o["reason"], "kind changed: directory -> file") << o.dump();
  EXPECT_EQ(read("/srv/x"), "x = 1\n");
  expectAllUnchanged(file);
}

TEST_F(PathChange, AnObjectSomeoneChangedIsNotReplacedAndTheResourceFails) {
  applyOk(declare(fileAt("m.x", "/srv/x")));
  write("/srv/x", "edited by hand\n");
  const auto dir = declare("[module.m.directory.x]\npath = \"/srv/x\"\n", "d.toml");
  Result r = apply(dir);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto o = outcomeOf(r.json(), "m.x");
  EXPECT_EQ(o["outcome"], "failed") << o.dump();
  EXPECT_NE(o["reason"].get<std::string>().find("a file is in the way at /srv/x"),
            std::string::npos)
      << o.dump();
  EXPECT_EQ(read("/srv/x"), "edited by hand\n");
}

}  // namespace
}  // namespace mesh::e2e
