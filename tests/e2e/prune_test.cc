// A resource dropped from the declaration is removed when mesh-host wrote it;
// nothing mesh-host did not write is ever deleted.
#include <fmt/format.h>

#include <filesystem>

#include "every_kind.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

class Prune : public EveryKind {};

TEST_F(Prune, DroppedResourcesAreRemoved) {
  ASSERT_EQ(apply(declPath).code, 0);
  write("/etc/m/unmanaged", "mine");  // written by someone else
  Result r = apply(
      declare("[module.m.file.config]\npath = \"/etc/m/config\"\ncontent = \"listen = 1\\n\"\n"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto j = r.json();
  for (const char* id : {"m.key", "m.current", "m.app"}) {
    auto o = outcomeOf(j, id);
    EXPECT_EQ(o["outcome"], "removed") << o.dump();
    EXPECT_EQ(o["reason"], "no longer declared");
    EXPECT_EQ(o["wrote"], "");
  }
  EXPECT_FALSE(fs::exists(at("/etc/m/key")));
  EXPECT_FALSE(fs::is_symlink(at("/opt/m/current")));
  EXPECT_FALSE(fs::exists(at("/opt/m/app")));
  // The directory holds a file mesh-host did not write: released, left in place.
  auto dir = outcomeOf(j, "m.etc");
  EXPECT_EQ(dir["outcome"], "released");
  EXPECT_EQ(dir["reason"], "no longer declared");
  EXPECT_EQ(dir["wrote"], "");
  EXPECT_NE(dir["detail"].get<std::string>().find("left in place"), std::string::npos);
  EXPECT_EQ(j["summary"]["released"], 1) << j.dump();
  EXPECT_EQ(j["summary"]["removed"], 3) << j.dump();
  EXPECT_EQ(read("/etc/m/unmanaged"), "mine");
  EXPECT_EQ(read("/etc/m/config"), "listen = 1\n");

  // Released records are gone: the next apply has nothing to remove.
  Result again = apply(
      declare("[module.m.file.config]\npath = \"/etc/m/config\"\ncontent = \"listen = 1\\n\"\n"));
  EXPECT_EQ(again.json()["summary"]["removed"], 0) << again.out;
  EXPECT_EQ(again.json()["summary"]["unchanged"], 1) << again.out;
}

TEST_F(Prune, NeverDeletesWhatItDidNotWrite) {
  write("/preexisting", "keep me");
  auto decl = declare("[module.m.file.x]\npath = \"/preexisting\"\ncontent = \"keep me\"\n");
  Result first = apply(decl);
  auto adopted = outcomeOf(first.json(), "m.x");
  EXPECT_EQ(adopted["outcome"], "unchanged");
  EXPECT_EQ(adopted["reason"], "adopted");
  // Declared, then dropped, but mesh-host never wrote it: released, not deleted.
  Result r = apply(declare("node = \"test\"\nempty = true\n"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto o = outcomeOf(r.json(), "m.x");
  EXPECT_EQ(o["outcome"], "released");
  EXPECT_NE(o["detail"].get<std::string>().find("never wrote"), std::string::npos) << o.dump();
  EXPECT_EQ(read("/preexisting"), "keep me");
}

TEST_F(Prune, ModifiedFileIsReleasedNotDeleted) {
  ASSERT_EQ(apply(declPath).code, 0);
  write("/etc/m/config", "hand edit\n");
  Result r = apply(declare("node = \"test\"\nempty = true\n"));
  auto o = outcomeOf(r.json(), "m.config");
  EXPECT_EQ(o["outcome"], "released");
  EXPECT_NE(o["detail"].get<std::string>().find("modified since"), std::string::npos) << o.dump();
  EXPECT_EQ(read("/etc/m/config"), "hand edit\n");
  // In text, in history and in the store's cycle row alike.
  Result h = mesh({"history", "m.config", "--json"});
  ASSERT_EQ(h.code, 0) << h.err;
  EXPECT_EQ(h.json()["cycles"][0]["outcomes"][0]["outcome"], "released") << h.out;
  EXPECT_GE(h.json()["cycles"][0]["summary"]["released"], 1) << h.out;
  write("/etc/m/key", "hand edit\n");
  ASSERT_EQ(apply(declare(text(), "all-again.toml")).code, 0);
  write("/etc/m/key", "edited again\n");
  Result text = mesh({"apply", declare("node = \"test\"\nempty = true\n")});
  EXPECT_NE(text.out.find("released m.key (m): left in place: modified since"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find(" released, 0 failed in "), std::string::npos) << text.out;
}

// Every kind, each under a parent of its own that is not declared.
class PruneUnderParent : public Prune {
 protected:
  std::string underParents() const {
    return fmt::format(R"(
[module.u.file.f]
path = "/srv/f/x"
content = "x"

[module.u.directory.d]
path = "/srv/d/sub"

[module.u.link.l]
path = "/srv/l/link"
target = "/nowhere"

[module.u.credential.c]
path = "/srv/c/key"
from = "{}"

[module.u.archive.a]
path = "/srv/a/tree"
bundle = "{}"
)",
                       secretFile, bundle);
  }
  static constexpr const char* kParents[] = {"f", "d", "l", "c", "a"};
  static constexpr const char* kUnderIds[] = {"u.f", "u.d", "u.l", "u.c", "u.a"};
};

// A recorded resource whose parent directory was replaced by a file: what
// mesh-host wrote went with the directory, so it is removed (already gone), exit
// 0, and the file in its place is left alone.
TEST_F(PruneUnderParent, AParentReplacedByAFileMeansAlreadyGone) {
  ASSERT_EQ(apply(declare(underParents(), "under.toml")).code, 0);
  for (const char* parent : kParents) {
    fs::remove_all(at(fmt::format("/srv/{}", parent)));
    write(fmt::format("/srv/{}", parent), "a file now\n");
  }
  Result r = apply(declare("node = \"test\"\nempty = true\n"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  const auto j = r.json();
  for (const char* id : kUnderIds) {
    auto o = outcomeOf(j, id);
    EXPECT_EQ(o["outcome"], "removed") << o.dump();
    EXPECT_EQ(o["reason"], "no longer declared") << o.dump();
    EXPECT_NE(o["detail"].get<std::string>().find("already gone"), std::string::npos) << o.dump();
  }
  EXPECT_EQ(j["summary"]["removed"], 5) << r.out;
  EXPECT_EQ(j["summary"]["failed"], 0) << r.out;
  for (const char* parent : kParents)
    EXPECT_EQ(read(fmt::format("/srv/{}", parent)), "a file now\n");
  Result again = apply(declare("node = \"test\"\nempty = true\n"));
  EXPECT_EQ(again.json()["summary"]["removed"], 0) << again.out;
}

// A parent replaced by a symbolic link is never followed: what lies behind it
// stays untouched (released: the record goes), exit 0.
TEST_F(PruneUnderParent, AParentReplacedByALinkIsNotFollowed) {
  ASSERT_EQ(apply(declare(underParents(), "under.toml")).code, 0);
  for (const char* parent : kParents) {
    const std::string dir = at(fmt::format("/srv/{}", parent));
    fs::rename(dir, dir + ".moved");
    fs::create_directory_symlink(fmt::format("{}.moved", parent), dir);
  }
  Result r = apply(declare("node = \"test\"\nempty = true\n"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  const auto j = r.json();
  for (const char* id : kUnderIds) {
    auto o = outcomeOf(j, id);
    EXPECT_EQ(o["outcome"], "released") << o.dump();
    EXPECT_NE(o["detail"].get<std::string>().find("is a symbolic link now"), std::string::npos)
        << o.dump();
  }
  EXPECT_EQ(j["summary"]["failed"], 0) << r.out;
  EXPECT_EQ(read("/srv/f.moved/x"), "x");
  EXPECT_EQ(read("/srv/c.moved/key"), kSecret);
  EXPECT_TRUE(fs::is_directory(at("/srv/d.moved/sub")));
  EXPECT_TRUE(fs::is_symlink(at("/srv/l.moved/link")));
  EXPECT_TRUE(fs::exists(at("/srv/a.moved/tree/bin/tool")));
}

TEST_F(Prune, RenamedIdKeepsThePath) {
  ASSERT_EQ(apply(declPath).code, 0);
  std::string renamed = text();
  renamed.replace(renamed.find("file.config"), 11, "file.settings");
  Result r = apply(declare(renamed));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = r.json();
  EXPECT_EQ(outcomeOf(j, "m.settings")["outcome"], "unchanged");
  EXPECT_EQ(outcomeOf(j, "m.config")["outcome"], "released");
  EXPECT_EQ(outcomeOf(j, "m.config")["detail"],
            "left in place: m.settings now manages /etc/m/config");
  EXPECT_EQ(read("/etc/m/config"), "listen = 1\n");
}

}  // namespace
}  // namespace mesh::e2e
