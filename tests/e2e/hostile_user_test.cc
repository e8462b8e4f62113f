// A hostile local user: a declared application tree (/srv/app, declared with
// `owner = "<user>"`) holds directories that user owns, so the user can replace any
// of them by a symbolic link at any moment. mesh-host (root) must never follow a
// link it did not write inside a declared path: the resource fails, naming the link
// component as declared and the link's owner, nothing is written through the link,
// and every other resource still converges.
//
// The attacker's target is a sibling tree `outside/` next to the node's root (it
// plays /etc): root-owned files and directories. It is snapshotted — inode, mode,
// owner, group, times, content — and must never change.
//
// The user is a real one (useradd, removed again with userdel); the attacker's
// acts run under its uid and gid through setpriv, the racing ones in
// mesh_link_racer (link_racer.cc). Needs root; skipped otherwise.
#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "../support/child.hh"
#include "harness.hh"
#include "local_user.hh"  // withPasswdLock

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------
// A snapshot that also holds owner and group (the harness's has neither).

struct Entry {
  ino_t ino = 0;
  mode_t mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  int64_t mtimeNs = 0, ctimeNs = 0;
  std::string content;  // files: bytes; links: target
  bool operator==(const Entry&) const = default;
};
using Tree = std::map<std::string, Entry>;

void snapshotInto(const std::string& base, const std::string& rel, Tree& out) {
  const std::string path = rel.empty() ? base : base + "/" + rel;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  Entry e;
  e.ino = st.st_ino;
  e.mode = st.st_mode;
  e.uid = st.st_uid;
  e.gid = st.st_gid;
  e.mtimeNs = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  e.ctimeNs = int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  if (S_ISREG(st.st_mode)) e.content = slurp(path);
  if (S_ISLNK(st.st_mode)) e.content = fs::read_symlink(path).string();
  out[rel.empty() ? "." : rel] = e;
  if (S_ISDIR(st.st_mode))
    for (const auto& d : fs::directory_iterator(path)) {
      const auto name = d.path().filename().string();
      snapshotInto(base, rel.empty() ? name : rel + "/" + name, out);
    }
}

Tree snapshot(const std::string& dir) {
  Tree t;
  snapshotInto(dir, "", t);
  return t;
}

std::string show(const Entry& e) {
  return fmt::format("ino {}, mode 0{:o}, {}:{}, mtime {}, ctime {}, {} bytes", e.ino, e.mode,
                     e.uid, e.gid, e.mtimeNs, e.ctimeNs, e.content.size());
}

// "" when equal; else every path that appeared, vanished or changed.
std::string differences(const Tree& before, const Tree& after) {
  std::string d;
  for (const auto& [p, e] : before) {
    auto it = after.find(p);
    if (it == after.end())
      d += fmt::format("  {} vanished (was {})\n", p, show(e));
    else if (!(it->second == e))
      d += fmt::format("  {} changed: {} -> {}\n", p, show(e), show(it->second));
  }
  for (const auto& [p, e] : after)
    if (!before.count(p)) d += fmt::format("  {} appeared: {}\n", p, show(e));
  return d;
}

// ---------------------------------------------------------------------------
// The declaration: every kind under /srv/app, plus one resource that requires
// the credential and one that has nothing to do with the attacker's tree.

struct Res {
  const char* id;
  const char* path;
  const char* requires_;  // an id, or nullptr
};

constexpr Res kResources[] = {
    {"app.base", "/srv/app", nullptr},
    {"app.conf", "/srv/app/conf/main/app.conf", nullptr},
    {"app.key", "/srv/app/secret/key", nullptr},
    {"app.data", "/srv/app/data", nullptr},
    {"app.cache", "/srv/app/data/cache", nullptr},
    {"app.current", "/srv/app/current/link", nullptr},
    {"app.site", "/srv/app/web/v1/site", nullptr},
    {"app.notes", "/srv/notes/app", "app.key"},
    {"plain.config", "/etc/plain/config", nullptr},
};

// Directories below /srv/app the user owns, so each can be swapped for a link
// (its parent is the user's too). /srv/app itself cannot: /srv is root's.
struct OwnedDir {
  const char* path;
  mode_t mode;
};
constexpr OwnedDir kOwnedDirs[] = {
    {"/srv/app/conf", 0755},   {"/srv/app/conf/main", 0755}, {"/srv/app/secret", 0755},
    {"/srv/app/data", 0750},   {"/srv/app/current", 0755},   {"/srv/app/web", 0755},
    {"/srv/app/web/v1", 0755},
};

constexpr const char* kSecretValue = "hostile-test-credential-7f3a";
constexpr const char* kAppPrefix = "/srv/app";

// What a refused link says, for the component `declared` owned by `uid`.
std::string linkMessage(const std::string& declared, uid_t uid) {
  return fmt::format(
      "{} is a symbolic link (owner uid {}); mesh-host does not follow links inside declared "
      "paths",
      declared, uid);
}

bool under(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/';
}

// Runs `argv` in a child with stdout/stderr in files; returns its pid.
pid_t spawn(const std::vector<std::string>& argv, const std::string& outPath,
            const std::string& errPath) {
  return test::spawnChild(argv, outPath, errPath);
}

// Runs `f` when it goes out of scope, also when an assertion returned early.
struct Finally {
  std::function<void()> f;
  ~Finally() { f(); }
};

class HostileUser : public Node {
 protected:
  void SetUp() override {
    Node::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "a hostile user needs root to create it and to apply";
    static int counter = 0;
    user = fmt::format("meshhostile{}x{}", ::getpid(), ++counter);
    Result add = withPasswdLock(
        {"useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", user});
    ASSERT_EQ(add.code, 0) << "useradd " << user << ": " << add.err;
    userCreated = true;
    const passwd* pw = ::getpwnam(user.c_str());
    ASSERT_NE(pw, nullptr) << user;
    uid = pw->pw_uid;
    gid = pw->pw_gid;
    ASSERT_NE(uid, 0u);

    // The user could reach everything here; only the modes below keep it out.
    fs::permissions(work, fs::perms(0755));
    fs::permissions(root, fs::perms(0755));
    outside = work + "/outside";
    layOutside();
    layApp();

    secretFile = work + "/secret.txt";
    std::ofstream(secretFile) << kSecretValue;
    ::chmod(secretFile.c_str(), 0600);
    bundle = publish(makeArchive({{"index.html", "<h1>app</h1>\n"}, {"css/site.css", "body {}\n"}},
                                 "tar -cf out index.html css"));
    declPath = declare(text());
  }

  void TearDown() override {
    stopRacer();
    Node::TearDown();
    if (userCreated) {
      Result del = withPasswdLock({"userdel", user});
      EXPECT_EQ(del.code, 0) << "userdel " << user << ": " << del.err;
      if (::getgrnam(user.c_str())) withPasswdLock({"groupdel", user});
    }
  }

  // outside/: what the links point into. Root's, 0600 files and 0755 directories,
  // mirroring /srv/app so every link lands on something worth protecting.
  void layOutside() {
    auto dir = [&](const std::string& rel) {
      fs::create_directories(outside + rel);
      ::chmod((outside + rel).c_str(), 0755);
    };
    auto file = [&](const std::string& rel, const std::string& content, mode_t mode = 0600) {
      std::ofstream(outside + rel, std::ios::binary) << content;
      ::chmod((outside + rel).c_str(), mode);
    };
    dir("");
    dir("/conf/main");
    file("/conf/main/app.conf", "root-only configuration\n");
    file("/conf/main/shadow", "root:*:19000:0:99999:7:::\n");
    dir("/secret");
    file("/secret/key", "the real key of root\n");
    dir("/data/cache");
    file("/data/cache/keep", "cached by root\n");
    dir("/current");
    fs::create_symlink("/nowhere", outside + "/current/link");
    dir("/web/v1/site");
    file("/web/v1/site/index.html", "<h1>root's site</h1>\n", 0644);
    dir("/bundles");
    file("/bundles/README", "root's bundles\n");
    file("/passwd", "root:x:0:0:root:/root:/bin/bash\n");
    ::lchown(outside.c_str(), 0, 0);
  }

  // /srv (root's), /srv/app and the directories below it (the user's).
  void layApp() {
    fs::create_directories(at("/srv/app"));
    ::chmod(at("/srv").c_str(), 0755);
    ::chmod(at("/srv/app").c_str(), 0755);
    ASSERT_EQ(::chown(at("/srv/app").c_str(), uid, 0), 0);  // group stays root's: undeclared
    for (const auto& d : kOwnedDirs) {
      fs::create_directories(at(d.path));
      ::chmod(at(d.path).c_str(), d.mode);
      ASSERT_EQ(::chown(at(d.path).c_str(), uid, gid), 0);
    }
  }

  std::string text(const std::string& dataMode = "0750") const {
    return fmt::format(R"(
[module.app.directory.base]
path = "/srv/app"
owner = "{user}"
mode = "0755"

[module.app.file.conf]
path = "/srv/app/conf/main/app.conf"
content = "listen = 8080\n"
mode = "0640"

[module.app.credential.key]
path = "/srv/app/secret/key"
from = "{secret}"
owner = "{user}"

[module.app.directory.data]
path = "/srv/app/data"
owner = "{user}"
mode = "{dataMode}"

[module.app.directory.cache]
path = "/srv/app/data/cache"
mode = "0700"

[module.app.link.current]
path = "/srv/app/current/link"
target = "/srv/app/web/v1/site"

[module.app.archive.site]
path = "/srv/app/web/v1/site"
bundle = "{bundle}"

[module.app.file.notes]
path = "/srv/notes/app"
content = "uses app.key\n"
requires = ["app.key"]

[module.plain.file.config]
path = "/etc/plain/config"
content = "plain = true\n"
)",
                       fmt::arg("user", user), fmt::arg("secret", secretFile),
                       fmt::arg("dataMode", dataMode), fmt::arg("bundle", bundle));
  }

  // The place in outside/ matching a path under /srv/app.
  std::string outsideFor(const std::string& declared) const {
    return outside + declared.substr(std::string_view(kAppPrefix).size());
  }

  Result asUser(std::vector<std::string> argv) const {
    std::vector<std::string> full = {"setpriv", fmt::format("--reuid={}", uid),
                                     fmt::format("--regid={}", gid), "--clear-groups"};
    full.insert(full.end(), argv.begin(), argv.end());
    return runCommand(full);
  }

  // As the user: the directory at `declared` moves to "<declared>.real" and a link
  // to its counterpart in outside/ takes its name.
  void plant(const std::string& declared) {
    Result r = asUser({"sh", "-c", "mv -T \"$1\" \"$1.real\" && ln -s \"$2\" \"$1\"", "sh",
                       at(declared), outsideFor(declared)});
    ASSERT_EQ(r.code, 0) << "planting a link at " << declared << ": " << r.err;
    struct stat st {};
    ASSERT_EQ(::lstat(at(declared).c_str(), &st), 0);
    ASSERT_TRUE(S_ISLNK(st.st_mode));
    ASSERT_EQ(st.st_uid, uid);
  }

  // As the user: the link goes, the real directory comes back.
  void unplant(const std::string& declared) {
    Result r = asUser({"sh", "-c", "rm \"$1\" && mv -T \"$1.real\" \"$1\"", "sh", at(declared)});
    ASSERT_EQ(r.code, 0) << "removing the link at " << declared << ": " << r.err;
  }

  // With the links at `planted` (declared paths): exit 1; a resource below a link
  // fails naming the first link on its way and the user's uid; one at a link's
  // own path fails naming it; what requires a failed one is skipped; the rest
  // converged. `converged`: they were before, so they are `unchanged`.
  void expectRefused(const Result& r, const std::set<std::string>& planted, bool converged) {
    ASSERT_EQ(r.code, 1) << r.out << r.err;
    const auto report = r.json();
    std::set<std::string> failed;
    for (const auto& res : kResources) {
      const auto o = outcomeOf(report, res.id);
      if (o.empty()) continue;
      const std::string path = res.path;
      const std::string reason = o.value("reason", "");
      EXPECT_EQ(reason.find(work), std::string::npos)
          << res.id << ": the reason names a host path: " << reason;
      std::string firstLink;  // the shallowest planted component on the way
      for (const auto& p : planted)
        if (under(path, p) && (firstLink.empty() || p.size() < firstLink.size())) firstLink = p;
      if (!firstLink.empty()) {
        EXPECT_EQ(o["outcome"], "failed") << o.dump();
        EXPECT_NE(reason.find(linkMessage(firstLink, uid)), std::string::npos)
            << res.id << " should name exactly " << firstLink << " and uid " << uid << ": "
            << o.dump();
        failed.insert(res.id);
      } else if (planted.count(path)) {
        EXPECT_EQ(o["outcome"], "failed") << o.dump();
        EXPECT_NE(reason.find(path), std::string::npos) << o.dump();
        failed.insert(res.id);
      } else if (res.requires_ && failed.count(res.requires_)) {
        EXPECT_EQ(o["outcome"], "skipped") << o.dump();
        EXPECT_TRUE(reason.starts_with(fmt::format("requires {}", res.requires_))) << o.dump();
      } else if (converged) {
        EXPECT_EQ(o["outcome"], "unchanged") << o.dump();
      } else {
        EXPECT_TRUE(o["outcome"] == "created" || o["outcome"] == "unchanged") << o.dump();
      }
    }
  }

  // The next apply converges everything; the one after touches nothing.
  void expectRecovers() {
    Result r = apply(declPath);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto report = r.json();  // held: a range over a temporary's member dangles
    for (const auto& o : report["outcomes"])
      EXPECT_TRUE(o["outcome"] == "created" || o["outcome"] == "updated" ||
                  o["outcome"] == "unchanged")
          << o.dump();
    Result again = apply(declPath);
    ASSERT_EQ(again.code, 0) << again.out << again.err;
    const auto j = again.json();
    EXPECT_EQ(j["summary"]["unchanged"], j["outcomes"].size()) << again.out;
    for (const auto& o : j["outcomes"]) EXPECT_EQ(o["outcome"], "unchanged") << o.dump();
    EXPECT_EQ(read("/srv/app/conf/main/app.conf"), "listen = 8080\n");
    EXPECT_EQ(read("/srv/app/secret/key"), kSecretValue);
    EXPECT_EQ(fs::read_symlink(at("/srv/app/current/link")).string(), "/srv/app/web/v1/site");
    EXPECT_EQ(read("/srv/app/web/v1/site/index.html"), "<h1>app</h1>\n");
  }

  void expectOutsideUnchanged(const Tree& before, const std::string& when) {
    const std::string d = differences(before, snapshot(outside));
    EXPECT_TRUE(d.empty()) << "outside/ changed " << when << ":\n" << d;
  }

  // --- the racer ---------------------------------------------------------------

  // Starts mesh_link_racer as the user, swapping every `positions` directory
  // (declared path) with a link to `target(position)`.
  void startRacer(const std::vector<std::pair<std::string, std::string>>& positions,
                  const std::vector<std::string>& extra = {}) {
    stopFile = work + "/racer.stop";
    fs::remove(stopFile);
    std::vector<std::string> argv = {"setpriv",
                                     fmt::format("--reuid={}", uid),
                                     fmt::format("--regid={}", gid),
                                     "--clear-groups",
                                     LINK_RACER_BIN,
                                     "--stop",
                                     stopFile,
                                     "--seconds",
                                     "120"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    for (const auto& [pos, target] : positions) argv.push_back(at(pos) + "=" + target);
    racerPid = spawn(argv, work + "/racer.out", work + "/racer.err");
    ASSERT_GT(racerPid, 0);
    // It is racing once every position has been swapped at least once.
    for (int i = 0; i < 200; ++i) {
      bool swapped = true;
      for (const auto& [pos, target] : positions) {
        struct stat st {};
        if (::lstat((at(pos) + ".racer").c_str(), &st) != 0) swapped = false;
      }
      int status = 0;
      if (::waitpid(racerPid, &status, WNOHANG) == racerPid) {
        racerPid = -1;
        FAIL() << "the racer exited at once: " << slurp(work + "/racer.err");
      }
      if (swapped) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL() << "the racer did not start: " << slurp(work + "/racer.err");
  }

  // Tells the racer to stop and waits for it; the number of swaps it made (-1
  // when it failed to put everything back or had to be killed).
  long stopRacer() {
    if (racerPid <= 0) return -1;
    std::ofstream(stopFile) << "stop";
    int status = 0;
    bool exited = false;
    for (int i = 0; i < 1000 && !exited; ++i) {
      if (::waitpid(racerPid, &status, WNOHANG) == racerPid)
        exited = true;
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!exited) {
      ::kill(racerPid, SIGKILL);
      ::waitpid(racerPid, &status, 0);
    }
    racerPid = -1;
    const std::string out = slurp(work + "/racer.out");
    EXPECT_TRUE(exited && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "racer: " << out << slurp(work + "/racer.err");
    if (!exited || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
    return out.starts_with("swaps ") ? std::stol(out.substr(6)) : -1;
  }

  // A failed outcome while links race: the clean refusal, or a clean "changed
  // while being …", or skipped for a failed dependency. Never a raw error, and
  // never a path outside the root.
  bool acceptableRaceReason(const std::string& id, const std::string& reason,
                            const std::vector<std::string>& positions) const {
    if (reason.find(work) != std::string::npos) return false;
    if (reason.starts_with("requires ")) return true;
    for (const auto& p : positions)
      if (reason.find(linkMessage(p, uid)) != std::string::npos) return true;
    if (reason.find("changed while being") != std::string::npos) return true;
    if (reason.find("was replaced by a non-directory while being converged") != std::string::npos)
      return true;
    // The directory at a racing position itself: a link in its way, named as declared.
    if (id == "app.data" && reason.starts_with("a symbolic link is in the way at /srv/app/data"))
      return true;
    return false;
  }

  std::string user;
  bool userCreated = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string outside, secretFile, bundle, declPath, stopFile;
  pid_t racerPid = -1;
};

// ---------------------------------------------------------------------------
// 1. A link planted before the apply, at every attacker-owned ancestor of every kind.

struct PlantCase {
  const char* kind;
  const char* id;
  const char* component;  // the ancestor replaced by a link
  bool convergedFirst;    // applied once before the link was planted
};

void PrintTo(const PlantCase& c, std::ostream* os) {
  *os << c.kind << " " << c.id << ", link at " << c.component
      << (c.convergedFirst ? ", converged first" : ", before the first apply");
}

std::vector<PlantCase> plantCases() {
  const std::pair<const char*, const char*> idOfKind[] = {
      {"file", "app.conf"},    {"credential", "app.key"}, {"directory", "app.cache"},
      {"link", "app.current"}, {"archive", "app.site"},
  };
  std::vector<PlantCase> cases;
  for (bool first : {false, true})
    for (const auto& [kind, id] : idOfKind) {
      std::string path;
      for (const auto& r : kResources)
        if (std::string(r.id) == id) path = r.path;
      for (const auto& d : kOwnedDirs)
        if (under(path, d.path)) cases.push_back({kind, id, d.path, first});
    }
  return cases;
}

class HostileUserPlanted : public HostileUser, public ::testing::WithParamInterface<PlantCase> {};

TEST_P(HostileUserPlanted, RefusedNothingWrittenOthersConverge) {
  const PlantCase c = GetParam();
  if (c.convergedFirst) {
    Result first = apply(declPath);
    ASSERT_EQ(first.code, 0) << first.out << first.err;
  }
  ASSERT_NO_FATAL_FAILURE(plant(c.component));
  const Tree before = snapshot(outside);

  Result r = apply(declPath);
  expectRefused(r, {c.component}, c.convergedFirst);
  const auto o = outcomeOf(r.json(), c.id);
  EXPECT_EQ(o["outcome"], "failed") << o.dump();
  expectOutsideUnchanged(before, "by an apply through the link at " + std::string(c.component));
  // The link is the user's, and stays as the user made it.
  EXPECT_EQ(fs::read_symlink(at(c.component)).string(), outsideFor(c.component));

  // A plan says the same and writes nothing either.
  Result p = plan(declPath, true);
  EXPECT_EQ(p.code, 1) << p.out << p.err;
  expectOutsideUnchanged(before, "by a plan");

  ASSERT_NO_FATAL_FAILURE(unplant(c.component));
  expectRecovers();
  expectOutsideUnchanged(before, "after the link was removed");
}

INSTANTIATE_TEST_SUITE_P(EveryAncestor, HostileUserPlanted, ::testing::ValuesIn(plantCases()),
                         [](const ::testing::TestParamInfo<PlantCase>& info) {
                           std::string name = fmt::format(
                               "{}_{}_{}", info.param.convergedFirst ? "Converged" : "Fresh",
                               info.param.kind, info.param.component + 1);
                           for (auto& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

// Every position at once: each resource names the first link on its way.
TEST_F(HostileUser, EveryPositionPlantedThenRestored) {
  ASSERT_EQ(apply(declPath).code, 0);
  std::vector<std::string> positions;
  for (const auto& d : kOwnedDirs) positions.push_back(d.path);
  // Deepest first: a nested one is planted while its parent is still real.
  std::sort(positions.begin(), positions.end(),
            [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (const auto& p : positions) ASSERT_NO_FATAL_FAILURE(plant(p));
  const Tree before = snapshot(outside);

  Result r = apply(declPath);
  expectRefused(r, std::set<std::string>(positions.begin(), positions.end()), true);
  expectOutsideUnchanged(before, "with a link at every position");

  for (auto it = positions.rbegin(); it != positions.rend(); ++it)
    ASSERT_NO_FATAL_FAILURE(unplant(*it));
  expectRecovers();
  expectOutsideUnchanged(before, "after the links were removed");
}

// A state directory in a directory of the user's: she could swap it, or plant a
// link where the store, the bundles or the logs are opened by path (here
// `bundles`, leading outside). The whole state directory is refused before
// anything is opened or applied: the run fails naming her directory, nothing is
// written (not even the resources that do not use the state directory) and
// nothing outside changes. (Before, the store was used and only the bundles link
// was caught, by the process applier.)
TEST_F(HostileUser, AStateDirInTheUsersDirectoryIsRefused) {
  const std::string parent = work + "/appstate", stateDir = parent + "/state";
  fs::create_directories(parent);
  ::chmod(parent.c_str(), 0755);
  ASSERT_EQ(::chown(parent.c_str(), uid, gid), 0);
  Result made = asUser({"sh", "-c", "mkdir -m 0755 \"$1\" && ln -s \"$2\" \"$1/bundles\"", "sh",
                        stateDir, outside + "/bundles"});
  ASSERT_EQ(made.code, 0) << made.err;
  extraArgs = {"--supervisor", "builtin", "--state-dir", stateDir};

  const std::string svcBundle = publish(makeArchive({{"bin/svc", "#!/bin/sh\nexec sleep 20\n"}},
                                                    "chmod 755 bin/svc && tar -cf out bin"));
  const std::string decl = declare(fmt::format(R"(
[module.svc.process.runtime]
bundle = "{}"
unit = {{ ExecStart = "{{bundle}}/bin/svc", Restart = "no" }}

[module.plain.file.config]
path = "/etc/plain/config"
content = "plain = true\n"
)",
                                               svcBundle),
                                   "process.toml");
  const Tree before = snapshot(outside);
  Result r = apply(decl);

  EXPECT_NE(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find(parent + " belongs to uid " + std::to_string(uid)), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(root + "/etc/plain/config")) << "applied with an untrusted state dir";
  EXPECT_FALSE(fs::exists(stateDir + "/state.db")) << "a store made in the user's directory";
  EXPECT_FALSE(fs::exists(stateDir + "/last-error")) << "a note written in the user's directory";
  EXPECT_FALSE(fs::exists(stateDir + "/last-error.page")) << "a page made in the user's directory";
  expectOutsideUnchanged(before, "by a run whose state dir is in the user's directory");
  EXPECT_EQ(fs::read_symlink(stateDir + "/bundles").string(), outside + "/bundles");
}

// ---------------------------------------------------------------------------
// 2. Racing: the user swaps every position with a link as fast as it can while
// mesh-host applies again and again.

constexpr int kRaceApplies = 200;
constexpr int kCheckEvery = 20;

TEST_F(HostileUser, RacingLinksNeverLeadOutside) {
  ASSERT_EQ(apply(declPath).code, 0);
  const Tree before = snapshot(outside);
  std::vector<std::pair<std::string, std::string>> racing;
  std::vector<std::string> positions;
  for (const auto& d : kOwnedDirs) {
    racing.emplace_back(d.path, outsideFor(d.path));
    positions.push_back(d.path);
  }
  ASSERT_NO_FATAL_FAILURE(startRacer(racing));

  const auto start = Clock::now();
  int failedOutcomes = 0, refusedApplies = 0, badReasons = 0;
  std::map<std::string, int> failedById, reasons;
  for (int i = 1; i <= kRaceApplies; ++i) {
    Result r = apply(declPath);
    ASSERT_TRUE(r.code == 0 || r.code == 1) << "apply " << i << ": " << r.out << r.err;
    if (r.code == 1) ++refusedApplies;
    const auto j = r.json();
    for (const auto& o : j["outcomes"]) {
      if (o["outcome"] != "failed") continue;
      ++failedOutcomes;
      ++failedById[o["id"].get<std::string>()];
      const std::string reason = o.value("reason", "");
      ++reasons[reason];
      if (!acceptableRaceReason(o["id"], reason, positions) && ++badReasons <= 10)
        ADD_FAILURE() << "apply " << i << ": " << o["id"] << " failed with " << reason;
    }
    if (i % kCheckEvery == 0) {
      const std::string d = differences(before, snapshot(outside));
      ASSERT_TRUE(d.empty()) << "outside/ changed by apply " << i << " or before:\n" << d;
    }
  }
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  const long swaps = stopRacer();
  EXPECT_GT(swaps, 0) << "the racer did not race";
  expectOutsideUnchanged(before, "at the end of the race");
  std::string byId;
  for (const auto& [id, n] : failedById) byId += fmt::format(" {}={}", id, n);
  std::cout << fmt::format(
                   "[ race     ] {} applies in {} ms against {} swaps: {} applies exited 1, {} "
                   "failed outcomes:{}\n",
                   kRaceApplies, ms, swaps, refusedApplies, failedOutcomes, byId)
            << std::flush;
  for (const auto& [reason, n] : reasons) std::cout << fmt::format("  {:5} {}\n", n, reason);
  EXPECT_EQ(badReasons, 0);

  // 3. The attacker stopped and its links are gone (the racer put every real
  // directory back): everything converges, then nothing is touched.
  for (const auto& p : positions) {
    struct stat st {};
    ASSERT_EQ(::lstat(at(p).c_str(), &st), 0) << p;
    ASSERT_TRUE(S_ISDIR(st.st_mode)) << p << " was not put back";
    ASSERT_FALSE(fs::exists(fs::symlink_status(at(p) + ".racer"))) << p;
  }
  expectRecovers();
  expectOutsideUnchanged(before, "after the race");
}

// The user swaps /srv/app/data, whose mode mesh-host sets, with a link to a 0600
// root file; the real directory is put back at 0700 after every swap, so every
// apply has a mode to set. The file's mode and owner must never move.
TEST_F(HostileUser, RacingDirectoryModeNeverChmodsTheLinkTarget) {
  declPath = declare(text("0755"), "data-mode.toml");
  ASSERT_EQ(apply(declPath).code, 0);
  const std::string victim = outside + "/passwd";
  const Tree before = snapshot(outside);
  ASSERT_NO_FATAL_FAILURE(startRacer({{"/srv/app/data", victim}}, {"--chmod", "0700"}));

  const auto start = Clock::now();
  std::map<std::string, int> dataOutcomes, reasons;
  int badReasons = 0;
  for (int i = 1; i <= kRaceApplies; ++i) {
    Result r = apply(declPath);
    ASSERT_TRUE(r.code == 0 || r.code == 1) << "apply " << i << ": " << r.out << r.err;
    const auto j = r.json();
    for (const auto& o : j["outcomes"]) {
      if (o["id"] == "app.data") ++dataOutcomes[o["outcome"].get<std::string>()];
      if (o["outcome"] != "failed") continue;
      const std::string reason = o.value("reason", "");
      ++reasons[reason];
      if (!acceptableRaceReason(o["id"], reason, {"/srv/app/data"}) && ++badReasons <= 10)
        ADD_FAILURE() << "apply " << i << ": " << o["id"] << " failed with " << reason;
    }
    struct stat st {};
    ASSERT_EQ(::lstat(victim.c_str(), &st), 0);
    ASSERT_EQ(st.st_mode & 07777, 0600u) << "after apply " << i;
    ASSERT_EQ(st.st_uid, 0u) << "after apply " << i;
    ASSERT_EQ(st.st_gid, 0u) << "after apply " << i;
    if (i % kCheckEvery == 0) {
      const std::string d = differences(before, snapshot(outside));
      ASSERT_TRUE(d.empty()) << "outside/ changed by apply " << i << " or before:\n" << d;
    }
  }
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  const long swaps = stopRacer();
  EXPECT_GT(swaps, 0) << "the racer did not race";
  expectOutsideUnchanged(before, "at the end of the race");
  std::string seen;
  for (const auto& [outcome, n] : dataOutcomes) seen += fmt::format(" {}={}", outcome, n);
  std::cout << fmt::format("[ race     ] {} applies in {} ms against {} swaps: app.data{}\n",
                           kRaceApplies, ms, swaps, seen)
            << std::flush;
  // The race was real: mesh-host did set the mode of the real directory.
  EXPECT_GT(dataOutcomes["updated"], 0);
  for (const auto& [reason, n] : reasons) std::cout << fmt::format("  {:5} {}\n", n, reason);
  EXPECT_EQ(badReasons, 0);

  expectRecovers();
  struct stat st {};
  ASSERT_EQ(::lstat(at("/srv/app/data").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(st.st_uid, uid);
}

}  // namespace
}  // namespace mesh::e2e
