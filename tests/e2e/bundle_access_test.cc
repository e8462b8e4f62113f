// A `User=` service under the default 0750 state directory: it is given exactly
// its bundle (traverse on the state directory, read on its bundle tree) and
// nothing else there; access follows the declaration (undeclared, another User=,
// a bundle shared by two users) and a no-op cycle writes no access list. On both
// supervisor backends, as a real unprivileged user (useradd). Needs root.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "harness.hh"
#include "local_user.hh"
#include "systemd_env.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

struct Proc {
  std::string name;    // the module, so the service is <name>.service
  std::string bundle;  // "sha256:…"
  std::string user;    // User=, "" for none (root)
};

class BundleAccess : public Node, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    Node::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to make users and apply";
    if (GetParam() == "systemd") {
      if (!SystemdNamespace::available(&skipWhy)) GTEST_SKIP() << skipWhy;
      auto& ns = SystemdNamespace::instance();
      extraArgs = {"--supervisor", "systemd", "--unit-dir", ns.unitDir()};
      extraEnv = {{"DBUS_SYSTEM_BUS_ADDRESS", ns.busAddress()}};
    } else {
      extraArgs = {"--supervisor", "builtin"};
    }
    static int counter = 0;
    prefix = fmt::format("ba{}x{}", ::getpid(), ++counter);
    // The users may reach the node's root and /var/lib, as on any system; only the
    // state directory's modes (and what mesh-host gives) decide what they reach there.
    fs::permissions(work, fs::perms(0755));
    fs::permissions(root, fs::perms(0755));
    fs::create_directories(root + "/var/lib");
    fs::permissions(root + "/var", fs::perms(0755));
    fs::permissions(root + "/var/lib", fs::perms(0755));
    out = work + "/out";
    fs::create_directories(out);
    fs::permissions(out, fs::perms(01777));
    // Each service writes its uid and its bundle's data file, read through the
    // bundle's path, then sleeps.
    const std::string svc =
        "#!/bin/sh\n{ id -u; cat \"$(dirname \"$0\")/../data\"; } > \"$OUT.tmp\" && "
        "mv \"$OUT.tmp\" \"$OUT\"\nexec sleep 100000\n";
    bundleA = publish(makeArchive({{"bin/svc", svc}, {"data", "bundle A\n"}},
                                  "chmod 755 bin/svc && tar -cf out bin data"));
    bundleB = publish(makeArchive({{"bin/svc", svc}, {"data", "bundle B\n"}},
                                  "chmod 755 bin/svc && tar -cf out bin data"));
    u1 = std::make_unique<LocalUser>("meshba");
    u2 = std::make_unique<LocalUser>("meshba");
    ASSERT_TRUE(u1->ok()) << u1->made.err;
    ASSERT_TRUE(u2->ok()) << u2->made.err;
  }

  void TearDown() override {
    if (!IsSkipped() && applied) apply(declare("node = \"test\"\nempty = true\n", "empty.toml"));
    Node::TearDown();
    u1.reset();
    u2.reset();
  }

  std::string name(const std::string& n) const { return prefix + n; }

  std::string declaration(const std::vector<Proc>& procs) {
    std::string text = "node = \"test\"\n";
    for (const auto& p : procs) {
      std::string user = p.user.empty() ? "" : fmt::format(", User = \"{}\"", p.user);
      text += fmt::format(R"(
[module.{0}.process.runtime]
bundle = "{1}"
unit = {{ ExecStart = "{{bundle}}/bin/svc", Restart = "no", Environment = "OUT={2}/{0}"{3} }}
)",
                          name(p.name), p.bundle, out, user);
    }
    return declare(text, fmt::format("decl{}.toml", ++decls));
  }

  Result applyProcs(const std::vector<Proc>& procs) {
    applied = true;
    for (const auto& p : procs) fs::remove(out + "/" + name(p.name));
    return apply(declaration(procs));
  }

  // What the service `n` wrote once started: "<uid>\n<its bundle's data>", awaited
  // (the service writes it as it starts, maybe after the apply's settle window).
  std::string wrote(const std::string& n) {
    const std::string path = out + "/" + name(n);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!fs::exists(path) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return fs::exists(path) ? slurp(path) : "";
  }

  std::string bundleDir(const std::string& digest) const {
    return stateDir() + "/bundles/" + digest.substr(digest.find(':') + 1);
  }

  static int64_t ctimeNs(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return -1;
    return int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec;
  }

  static std::string outcome(const Result& r, const std::string& id) {
    try {
      return outcomeOf(nlohmann::json::parse(r.out), id).value("outcome", "?");
    } catch (const std::exception&) {
      return "unparsable";
    }
  }

  // `argv` as `u` failed for want of permission.
  static ::testing::AssertionResult denied(const LocalUser& u, std::vector<std::string> argv) {
    Result r = u.run(argv);
    if (r.code != 0 && r.err.find("Permission denied") != std::string::npos)
      return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << argv.back() << " as " << u.name << ": exit " << r.code << ", " << r.out << r.err;
  }

  std::unique_ptr<LocalUser> u1, u2;
  std::string prefix, out, bundleA, bundleB, skipWhy;
  int decls = 0;
  bool applied = false;
};

// The service runs as its user from its bundle under a 0750 state directory;
// that user reads its bundle and nothing else of the state directory.
TEST_P(BundleAccess, AUserServiceRunsFromItsBundleAndReachesNothingElse) {
  Result r = applyProcs({{"svc", bundleA, u1->name}, {"other", bundleB, ""}});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcome(r, name("svc") + ".runtime"), "created") << r.out;
  EXPECT_EQ(wrote("svc"), fmt::format("{}\nbundle A\n", u1->uid));
  EXPECT_EQ(wrote("other"), "0\nbundle B\n");
  struct stat st {};
  ASSERT_EQ(::stat(stateDir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u) << "the state directory was loosened";

  // A blob cache in the state directory, published to as `blob add` does (0755
  // directories, 0644 files): the next cycle closes it to others.
  const std::string secretBlob = work + "/blob";
  std::ofstream(secretBlob) << "a bundle of another service\n";
  Result added =
      runCommand({MESH_HOST_BIN, "blob", "add", secretBlob, "--to", stateDir() + "/blobs"});
  ASSERT_EQ(added.code, 0) << added.err;
  const std::string blobPath = stateDir() + "/blobs/sha256/" + added.out.substr(7, 64);
  Result again = apply(declaration({{"svc", bundleA, u1->name}, {"other", bundleB, ""}}));
  ASSERT_EQ(again.code, 0) << again.out << again.err;

  Result own = u1->run({"cat", bundleDir(bundleA) + "/data"});
  EXPECT_EQ(own.code, 0) << own.err;
  EXPECT_EQ(own.out, "bundle A\n");
  // A node key to be kept from it too.
  Result key = mesh({"key", "init"});
  ASSERT_TRUE(fs::exists(stateDir() + "/node.key")) << key.out << key.err;
  EXPECT_TRUE(denied(*u1, {"cat", stateDir() + "/state.db"}));
  EXPECT_TRUE(denied(*u1, {"cat", stateDir() + "/node.key"}));
  EXPECT_TRUE(denied(*u1, {"cat", bundleDir(bundleB) + "/data"}));
  EXPECT_TRUE(denied(*u1, {"ls", bundleDir(bundleB)}));
  EXPECT_TRUE(denied(*u1, {"ls", stateDir() + "/bundles"}));
  EXPECT_TRUE(denied(*u1, {"ls", stateDir()}));
  EXPECT_TRUE(denied(*u1, {"ls", stateDir() + "/blobs"}));
  EXPECT_TRUE(denied(*u1, {"cat", blobPath}));
  // A user of no declared process reaches nothing, its bundle included.
  EXPECT_TRUE(denied(*u2, {"cat", bundleDir(bundleA) + "/data"}));
}

// A no-op cycle observes and writes nothing: no access list, no mode.
TEST_P(BundleAccess, ASecondApplyWritesNoAccessList) {
  const std::vector<Proc> procs = {{"svc", bundleA, u1->name}, {"other", bundleB, ""}};
  Result first = applyProcs(procs);
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  ASSERT_EQ(wrote("svc"), fmt::format("{}\nbundle A\n", u1->uid));
  const std::vector<std::string> dirs = {stateDir(), stateDir() + "/bundles", bundleDir(bundleA),
                                         bundleDir(bundleB)};
  std::vector<int64_t> before;
  for (const auto& d : dirs) before.push_back(ctimeNs(d));

  const std::string trace = work + "/strace.out";
  std::vector<std::string> argv = {"strace",
                                   "-f",
                                   "-qq",
                                   "-o",
                                   trace,
                                   "-e",
                                   "trace=setxattr,fsetxattr,lsetxattr,removexattr,fremovexattr,"
                                   "chmod,fchmod,fchmodat",
                                   MESH_HOST_BIN,
                                   "apply",
                                   declaration(procs),
                                   "--json",
                                   "--root",
                                   root,
                                   "--blobs",
                                   blobs,
                                   "--node",
                                   "test"};
  argv.insert(argv.end(), extraArgs.begin(), extraArgs.end());
  Result again = runCommand(argv, extraEnv);
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  const auto j = nlohmann::json::parse(again.out);
  for (const auto& o : j["outcomes"]) {
    EXPECT_EQ(o["outcome"], "unchanged") << o.dump();
    EXPECT_FALSE(o["restarted"].get<bool>()) << o.dump();
  }
  EXPECT_FALSE(j.contains("access")) << again.out;
  EXPECT_EQ(slurp(trace), "") << "the no-op apply changed an access list or a mode";
  for (size_t i = 0; i < dirs.size(); ++i) EXPECT_EQ(ctimeNs(dirs[i]), before[i]) << dirs[i];
}

// Access is the union of the current declaration's users: a shared bundle is
// read by both; a user whose process changes User= or leaves loses it; gc
// still removes a bundle that carried an access list.
TEST_P(BundleAccess, AccessFollowsTheDeclarationAndIsRevoked) {
  Result both = applyProcs({{"one", bundleA, u1->name}, {"two", bundleA, u2->name}});
  ASSERT_EQ(both.code, 0) << both.out << both.err;
  EXPECT_EQ(wrote("one"), fmt::format("{}\nbundle A\n", u1->uid));
  EXPECT_EQ(wrote("two"), fmt::format("{}\nbundle A\n", u2->uid));
  for (const auto* u : {u1.get(), u2.get()}) {
    Result r = u->run({"cat", bundleDir(bundleA) + "/data"});
    EXPECT_EQ(r.code, 0) << u->name << ": " << r.err;
  }

  // Process two now runs as u1: u2 can no longer reach the bundle, nor traverse
  // the state directory at all.
  Result moved = applyProcs({{"one", bundleA, u1->name}, {"two", bundleA, u1->name}});
  ASSERT_EQ(moved.code, 0) << moved.out << moved.err;
  EXPECT_EQ(wrote("two"), fmt::format("{}\nbundle A\n", u1->uid));
  EXPECT_TRUE(denied(*u2, {"cat", bundleDir(bundleA) + "/data"}));
  EXPECT_TRUE(denied(*u2, {"stat", stateDir() + "/bundles"}));
  Result stillOne = u1->run({"cat", bundleDir(bundleA) + "/data"});
  EXPECT_EQ(stillOne.code, 0) << stillOne.err;

  // Both leave the declaration (another process, no User=, stays): u1 loses it.
  Result gone = applyProcs({{"other", bundleB, ""}});
  ASSERT_EQ(gone.code, 0) << gone.out << gone.err;
  EXPECT_EQ(outcome(gone, name("one") + ".runtime"), "removed") << gone.out;
  EXPECT_TRUE(fs::exists(bundleDir(bundleA)));  // left until gc
  EXPECT_TRUE(denied(*u1, {"cat", bundleDir(bundleA) + "/data"}));
  EXPECT_TRUE(denied(*u1, {"stat", stateDir() + "/bundles"}));
  Result acl = runCommand({"getfacl", "-cn", stateDir()});
  EXPECT_EQ(acl.out.find("user:" + std::to_string(u1->uid)), std::string::npos) << acl.out;

  Result gc = mesh({"gc", "--keep", "1"});
  EXPECT_EQ(gc.code, 0) << gc.out << gc.err;
  EXPECT_FALSE(fs::exists(bundleDir(bundleA))) << gc.out;
  EXPECT_TRUE(fs::exists(bundleDir(bundleB)));
}

INSTANTIATE_TEST_SUITE_P(Backends, BundleAccess, ::testing::Values("builtin", "systemd"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mesh::e2e
