// Archives through the real binary: adopting a path that already holds a tree
// (what mesh-host did not write is never deleted silently; `replace = true` says
// it may be, and a plan lists it), the modes of unpacked entries (group and world
// write dropped unless `keep-modes = true`), names of NAME_MAX bytes, the trees a
// kill leaves beside the path, and gc of those under <state-dir>/bundles.
#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

constexpr int kCrashed = 86;  // util/faults.hh kCrashExitCode

using Snapshot = std::map<std::string, PathSnapshot>;

mode_t modeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

class Archive : public Node {
 protected:
  void SetUp() override {
    Node::SetUp();
    site = publish(makeArchive({{"index.html", "<p>site</p>\n"}, {"css/site.css", "p {}\n"}},
                               "tar -cf out index.html css"));
  }

  // An archive `m.app` at `path`, with `extra` keys; and a file, to crash on.
  std::string declaration(const std::string& bundle, const std::string& extra = "",
                          const std::string& path = "/srv/app",
                          const std::string& fileContent = "x") {
    return declare(fmt::format(R"(
[module.m.archive.app]
path = "{}"
bundle = "{}"
{}

[module.m.file.other]
path = "/etc/m/other"
content = "{}"
)",
                               path, bundle, extra, fileContent),
                   "decl-" + std::to_string(++decls) + ".toml");
  }

  nlohmann::json appOf(const Result& r) { return outcomeOf(r.json(), "m.app"); }

  // A tree at /srv/app that mesh-host did not write: one of the bundle's files
  // with other content, and three things the bundle does not hold.
  void plantForeignTree() {
    fs::create_directories(at("/srv/app/b"));
    fs::create_directories(at("/srv/app/logs"));
    write("/srv/app/index.html", "<p>by hand</p>\n");
    write("/srv/app/a.conf", "mine\n");
    write("/srv/app/b/c", "also mine\n");
  }

  // Every ".mesh-" entry in `dir`.
  std::vector<std::string> leftoversIn(const std::string& dir) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().starts_with(".mesh-")) out.push_back(e.path());
    return out;
  }

  // util/fs.hh tempNameFor(name, "new"): where a new tree for `name` is unpacked.
  static std::string freshNameFor(const std::string& name) {
    Result r = runCommand({"sh", "-c", "printf %s '" + name + "' | sha256sum"});
    EXPECT_EQ(r.code, 0);
    return ".mesh-new." + r.out.substr(0, 16);
  }

  std::string site;
  int decls = 0;
};

const char* kForeignReason =
    "/srv/app holds 3 file(s) mesh-host did not write: a.conf, b/c, logs/; declare replace = "
    "true to let mesh-host delete them, or move them away";

TEST_F(Archive, AdoptingForeignFilesFailsAndNamesThem) {
  plantForeignTree();
  const Snapshot before = snapshotTree(at("/srv"));
  const std::string decl = declaration(site);

  Result p = plan(decl, true);
  EXPECT_EQ(p.code, 1) << p.out << p.err;
  EXPECT_EQ(appOf(p)["outcome"], "failed");
  EXPECT_EQ(appOf(p)["reason"], kForeignReason);

  for (int i = 0; i < 2; ++i) {  // failing again: still no record of writing the tree
    Result r = apply(decl);
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_EQ(appOf(r)["outcome"], "failed");
    EXPECT_EQ(appOf(r)["reason"], kForeignReason);
    EXPECT_EQ(outcomeOf(r.json(), "m.other")["outcome"], i == 0 ? "created" : "unchanged");
    EXPECT_EQ(snapshotTree(at("/srv")), before) << "the foreign tree was touched";
  }

  // Moved away: the bundle's own path (index.html) is then simply replaced.
  fs::remove(at("/srv/app/a.conf"));
  fs::remove_all(at("/srv/app/b"));
  fs::remove_all(at("/srv/app/logs"));
  Result r = apply(decl);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(appOf(r)["outcome"], "updated") << r.out;
  EXPECT_EQ(read("/srv/app/index.html"), "<p>site</p>\n");
  r = apply(decl);
  EXPECT_EQ(appOf(r)["outcome"], "unchanged") << r.out;
}

TEST_F(Archive, ManyForeignFilesAreCountedAndTheFirstFiveNamed) {
  fs::create_directories(at("/srv/app"));
  for (int i = 1; i <= 7; ++i) write("/srv/app/f" + std::to_string(i), "x");
  Result r = apply(declaration(site));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(appOf(r)["reason"],
            "/srv/app holds 7 file(s) mesh-host did not write: f1, f2, f3, f4, f5, …; declare "
            "replace = true to let mesh-host delete them, or move them away");
  EXPECT_TRUE(fs::exists(at("/srv/app/f7")));
}

TEST_F(Archive, ReplaceTrueDeletesThemAndPlanListsThem) {
  plantForeignTree();
  const Snapshot before = snapshotTree(at("/srv"));
  const std::string decl = declaration(site, "replace = true");

  Result p = plan(decl);
  EXPECT_EQ(p.code, 3) << p.out << p.err;
  for (const char* line :
       {"would update m.app (m): 2 file(s) from sha256:",
        "; would delete 3 file(s) mesh-host did not write (replace = true): a.conf, b/c, logs/",
        "\n- /srv/app/a.conf\n- /srv/app/b/c\n- /srv/app/logs/\n"})
    EXPECT_NE(p.out.find(line), std::string::npos) << "no '" << line << "' in:\n" << p.out;
  Result pj = plan(decl, true);
  EXPECT_EQ(appOf(pj)["outcome"], "updated");
  EXPECT_NE(appOf(pj)["diff"].get<std::string>().find("- /srv/app/b/c\n"), std::string::npos)
      << pj.out;
  EXPECT_EQ(snapshotTree(at("/srv")), before) << "the plan touched the tree";

  Result r = apply(decl);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(appOf(r)["outcome"], "updated");
  EXPECT_NE(appOf(r)["detail"].get<std::string>().find(
                "deleted 3 file(s) mesh-host did not write (replace = true): a.conf, b/c, logs/"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(at("/srv/app/a.conf")));
  EXPECT_FALSE(fs::exists(at("/srv/app/logs")));
  EXPECT_EQ(read("/srv/app/index.html"), "<p>site</p>\n");
  EXPECT_EQ(leftoversIn(at("/srv")), std::vector<std::string>{});
  r = apply(decl);
  EXPECT_EQ(appOf(r)["outcome"], "unchanged") << r.out;
}

// Adopt and give back: the tree `replace = true` replaced is kept first and put
// back, whole, with its modes, when the archive leaves the declaration.
TEST_F(Archive, ReplaceTrueKeepsTheTreeAndGivesItBackWhenUndeclared) {
  plantForeignTree();
  ::chmod(at("/srv/app/b").c_str(), 0750);
  ::chmod(at("/srv/app/a.conf").c_str(), 0600);
  auto contents = [this] {
    std::map<std::string, std::string> out;
    for (const auto& [path, snap] : snapshotTree(at("/srv/app")))
      out[path] = fmt::format("{:o} {}", snap.mode & 07777, snap.content);
    return out;
  };
  const auto before = contents();
  Result r = apply(declaration(site, "replace = true"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(appOf(r)["detail"].get<std::string>().find("; kept what was there"), std::string::npos)
      << r.out;
  ASSERT_EQ(read("/srv/app/index.html"), "<p>site</p>\n");

  const std::string without = declare(R"(
[module.m.file.other]
path = "/etc/m/other"
content = "x"
)",
                                      "without.toml");
  Result p = plan(without);
  EXPECT_NE(p.out.find("would restore m.app (m): a tree of "), std::string::npos) << p.out;
  r = apply(without);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(appOf(r)["outcome"], "removed") << r.out;
  EXPECT_EQ(appOf(r)["reason"], "restored what was there before mesh-host") << r.out;
  EXPECT_EQ(contents(), before) << "not the tree that was there before";
  EXPECT_EQ(leftoversIn(at("/srv")), std::vector<std::string>{});
}

TEST_F(Archive, AdoptingATreeThatIsTheBundleChangesNothing) {
  fs::create_directories(at("/srv/app"));
  Result x = runCommand({"tar", "-xf", blobs + "/sha256/" + site.substr(7), "-C", at("/srv/app")});
  ASSERT_EQ(x.code, 0) << x.err;
  const Snapshot before = snapshotTree(at("/srv/app"));
  Result r = apply(declaration(site));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(appOf(r)["outcome"], "unchanged") << r.out;
  EXPECT_EQ(snapshotTree(at("/srv/app")), before);
}

TEST_F(Archive, FilesAddedToATreeMeshHostWroteAreDriftAndGo) {
  const std::string decl = declaration(site);
  ASSERT_EQ(apply(decl).code, 0);
  write("/srv/app/extra", "added\n");
  Result r = apply(decl);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(appOf(r)["outcome"], "updated");
  EXPECT_EQ(appOf(r)["reason"], "drift: unexpected: extra");
  EXPECT_FALSE(fs::exists(at("/srv/app/extra")));
}

// Made by real tar: a 0777 directory and file, a 0666 file.
TEST_F(Archive, GroupAndWorldWriteAreDroppedUnlessKeepModes) {
  const std::string open =
      publish(makeArchive({{"bin/run", "#!/bin/sh\n"}, {"data/x", "x\n"}},
                          "chmod 0777 bin bin/run && chmod 0666 data/x && tar -cf out bin data"));
  struct Want {
    const char* extra;
    mode_t dir, run, data;
  };
  const Want wants[] = {{"", 0755, 0755, 0644},
                        {"keep-modes = true", 0777, 0777, 0666},
                        {"keep-modes = false", 0755, 0755, 0644}};
  bool first = true;
  for (const auto& w : wants) {
    SCOPED_TRACE(w.extra);
    const std::string decl = declaration(open, w.extra);
    Result r = apply(decl);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    // Changing keep-modes is a declared change.
    EXPECT_EQ(appOf(r)["outcome"], first ? "created" : "updated") << r.out;
    EXPECT_EQ(appOf(r)["reason"], first ? "new" : "declared") << r.out;
    first = false;
    EXPECT_EQ(modeOf(at("/srv/app/bin")), w.dir);
    EXPECT_EQ(modeOf(at("/srv/app/bin/run")), w.run);
    EXPECT_EQ(modeOf(at("/srv/app/data/x")), w.data);
    r = apply(decl);
    EXPECT_EQ(appOf(r)["outcome"], "unchanged") << r.out;
  }
}

TEST_F(Archive, NameOfNameMaxBytes) {
  const std::string path = "/srv/" + std::string(255, 'n');
  Result r = apply(declaration(site, "", path));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(appOf(r)["outcome"], "created");
  EXPECT_EQ(read(path + "/index.html"), "<p>site</p>\n");
  r = apply(declaration(site, "", path));
  EXPECT_EQ(appOf(r)["outcome"], "unchanged") << r.out;
  // A new version switched in beside it: an exchange under a fixed-length name.
  const std::string v2 = publish(makeArchive({{"index.html", "<p>v2</p>\n"}}, "tar -cf out *"));
  r = apply(declaration(v2, "", path));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(appOf(r)["outcome"], "updated");
  EXPECT_EQ(read(path + "/index.html"), "<p>v2</p>\n");
  EXPECT_FALSE(fs::exists(at(path + "/css")));
  r = apply(declaration(v2, "", path));
  EXPECT_EQ(appOf(r)["outcome"], "unchanged") << r.out;
  EXPECT_EQ(leftoversIn(at("/srv")), std::vector<std::string>{});
}

// Killed with the new tree unpacked beside the path, not yet switched in: the
// next apply removes it and switches in a new one.
TEST_F(Archive, KilledBeforeTheSwitchTheNextApplyCleansUp) {
  ASSERT_EQ(apply(declaration(site)).code, 0);
  const std::string v2 = publish(makeArchive({{"index.html", "<p>v2</p>\n"}}, "tar -cf out *"));
  const std::string decl = declaration(v2);
  Result crashed = mesh({"apply", decl, "--json"}, {{"MESH_HOST_CRASH_AT", "before-rename"}});
  ASSERT_EQ(crashed.code, kCrashed) << crashed.out << crashed.err;
  EXPECT_EQ(leftoversIn(at("/srv")), std::vector<std::string>{at("/srv/" + freshNameFor("app"))});
  EXPECT_EQ(read("/srv/app/index.html"), "<p>site</p>\n");

  Result r = apply(decl);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(appOf(r)["outcome"], "updated");
  EXPECT_EQ(read("/srv/app/index.html"), "<p>v2</p>\n");
  EXPECT_EQ(leftoversIn(at("/srv")), std::vector<std::string>{});
  EXPECT_EQ(appOf(apply(decl))["outcome"], "unchanged");
}

// A tree a kill left beside an archive that is as declared (killed after the
// switch, before the old tree was removed): after a cycle that did not finish,
// the next one sweeps it though it has nothing to unpack there.
TEST_F(Archive, LeftoverBesideAnUnchangedArchiveIsSweptAfterACrash) {
  ASSERT_EQ(apply(declaration(site)).code, 0);
  const std::string leftover = at("/srv/" + freshNameFor("app"));
  fs::create_directories(leftover + "/css");
  std::ofstream(leftover + "/index.html") << "<p>the old tree</p>\n";

  // The cycle dies writing the file (the archive is unchanged in it).
  const std::string decl = declaration(site, "", "/srv/app", "y");
  Result crashed = mesh({"apply", decl, "--json"}, {{"MESH_HOST_CRASH_AT", "before-rename"}});
  ASSERT_EQ(crashed.code, kCrashed) << crashed.out << crashed.err;
  EXPECT_TRUE(fs::exists(leftover)) << "swept by a cycle after one that finished";

  Result r = apply(decl);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(appOf(r)["outcome"], "unchanged") << r.out;
  EXPECT_FALSE(fs::exists(leftover)) << "the leftover survived the sweep";
  EXPECT_EQ(read("/srv/app/index.html"), "<p>site</p>\n");
}

// gc: the leftovers of a process bundle's unpack under <state-dir>/bundles go,
// as today's ".mesh-new.<16 hex>" and as earlier versions named them; nothing else.
TEST_F(Archive, GcRemovesUnpackLeftoversOfBundles) {
  ASSERT_EQ(apply(declaration(site)).code, 0);
  const std::string bundles = stateDir() + "/bundles";
  const std::string now = bundles + "/.mesh-new.0123456789abcdef";
  const std::string legacy = bundles + "/." + std::string(64, 'a') + ".mesh-new.0badcafe";
  const std::string other = bundles + "/.mesh-new.not-a-hash";
  for (const auto& d : {now, legacy, other}) {
    fs::create_directories(d + "/bin");
    std::ofstream(d + "/bin/tool") << "tool\n";
  }
  Result r = mesh({"gc", "--keep", "1"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("removed leftover " + now + " (5 bytes)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("removed leftover " + legacy + " (5 bytes)"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(now));
  EXPECT_FALSE(fs::exists(legacy));
  EXPECT_TRUE(fs::exists(other));
}

}  // namespace
}  // namespace mesh::e2e
