// A node's services in its published status (docs/fleet.md, `services`), kept fresh
// between cycles, and its declared health — with a real agent (`mesh-host run --etcd`) on
// a real etcd, on both supervisor backends (the systemd one booted in a private namespace
// by tests/systemd/sdns.sh). Every wait is on an etcd watch of the node's status key (or on
// the node's log), never a fixed sleep; the one fixed window is the idle node's, in which
// nothing may happen.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "../e2e/systemd_env.hh"
#include "../support/child.hh"
#include "await_file.hh"
#include "await_status.hh"
#include "fleet_fixture.hh"

namespace mesh::fleet::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Service = NodeStatus::Service;

class ServiceStatus : public FleetTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "systemd") {
      std::string why;
      if (!e2e::SystemdNamespace::available(&why)) GTEST_SKIP() << why;
    }
    FleetTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    for (auto& c : cluster)
      if (c == '/') c = '-';
    keys = FleetKeys{cluster};
    static int n = 0;
    module = fmt::format("h{}{}", GetParam().substr(0, 1), ++n);
    blobs = work + "/blobs";
    root = work + "/node";
    stateDir = root + "/var/lib/mesh-host";
    log = work + "/node.log";
    fs::create_directories(blobs);
    fs::create_directories(root + "/etc");
    bundle = makeBundle();
  }

  void TearDown() override {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
    if (!IsSkipped() && GetParam() == "systemd" && !module.empty())
      e2e::SystemdNamespace::instance().ctl({"stop", module + ".service"});
    FleetTest::TearDown();
  }

  std::vector<std::string> backendArgs() const {
    if (GetParam() != "systemd") return {"--supervisor", "builtin"};
    return {"--supervisor", "systemd", "--unit-dir", e2e::SystemdNamespace::instance().unitDir()};
  }
  std::vector<std::string> backendEnv() const {
    if (GetParam() != "systemd") return {};
    const auto& ns = e2e::SystemdNamespace::instance();
    return {"DBUS_SYSTEM_BUS_ADDRESS=" + ns.busAddress(),
            "MESH_HOST_JOURNAL_DIR=" + ns.journalDir()};
  }

  // bin/svc writes its pid to <root>/svc.pid and sleeps; bin/check passes while
  // <root>/ok exists, else says so and exits 1.
  std::string makeBundle() {
    const std::string src = work + "/bundle-src";
    fs::create_directories(src + "/bin");
    std::ofstream(src + "/bin/svc") << "#!/bin/sh\necho $$ > \"$1/svc.pid\"\nexec sleep 100000\n";
    std::ofstream(src + "/bin/check")
        << "#!/bin/sh\ntest -e \"$1/ok\" || { echo \"no ok file in $1\"; exit 1; }\n";
    for (const char* f : {"/bin/svc", "/bin/check"}) fs::permissions(src + f, fs::perms(0755));
    Result tar = runCommand({"tar", "-C", src, "-cf", work + "/bundle.tar", "bin"});
    EXPECT_EQ(tar.code, 0) << tar.err;
    Result add = runCommand({MESH_HOST_BIN, "blob", "add", work + "/bundle.tar", "--to", blobs});
    EXPECT_EQ(add.code, 0) << add.out << add.err;
    std::string digest = add.out;
    while (!digest.empty() && (digest.back() == '\n' || digest.back() == ' ')) digest.pop_back();
    return digest.substr(digest.rfind(' ') + 1);
  }

  std::string decl(int serial, const std::string& health = "") const {
    return fmt::format(R"(serial = {0}

[module.{1}.process.svc]
bundle = "{2}"
unit = {{ ExecStart = "{{bundle}}/bin/svc {{root}}", Restart = "always", RestartSec = "200ms" }}
{3}
)",
                       serial, module, bundle, health);
  }

  void startNode() {
    Result init =
        runCommand({MESH_HOST_BIN, "key", "init", "--root", root, "--state-dir", stateDir});
    ASSERT_EQ(init.code, 0) << init.err;
    Result enroll = runCommand(
        fleetArgv("enroll", {"--key", keyFile, "n1", init.out.substr(0, init.out.find('\n'))}));
    ASSERT_EQ(enroll.code, 0) << enroll.out << enroll.err;
    std::vector<std::string> argv = {MESH_HOST_BIN, "run",
                                     "--etcd",      url,
                                     "--cluster",   cluster,
                                     "--node",      "n1",
                                     "--root",      root,
                                     "--state-dir", stateDir,
                                     "--trust",     operatorKey.text(),
                                     "--interval",  "1h",
                                     "--splay",     "0",
                                     "--blobs",     blobs};
    for (const auto& a : backendArgs()) argv.push_back(a);
    pid = ::mesh::test::spawnChild(argv, log, "", ::mesh::test::Output::Append, backendEnv());
  }

  void pushDecl(const std::string& text) {
    Result r = push({"--nodes", "n1", declare(text, fmt::format("d{}.toml", ++pushes))});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
  }

  bool awaitStatus(const std::function<bool(const NodeStatus&)>& ok,
                   std::chrono::milliseconds timeout = 20s) {
    const bool done = awaitStatusKey(
        *client, keys.status("n1"),
        [&](const std::optional<NodeStatus>& s) {
          if (s) last = *s;
          return s && ok(*s);
        },
        timeout);
    EXPECT_TRUE(done) << "status not as expected within " << timeout.count()
                      << " ms; last: " << encodeStatus(last) << "\nlog:\n"
                      << slurp(log);
    return done;
  }

  static const Service* svc(const NodeStatus& s) {
    return s.services.size() == 1 ? &s.services[0] : nullptr;
  }

  // `mesh-host status` on the node.
  Result localStatus(bool json) {
    std::vector<std::string> argv = {MESH_HOST_BIN, "status",      "--root",
                                     root,          "--state-dir", stateDir};
    for (const auto& a : backendArgs()) argv.push_back(a);
    if (json) argv.push_back("--json");
    std::vector<std::string> env = {"env"};
    for (const auto& e : backendEnv()) env.push_back(e);
    env.insert(env.end(), argv.begin(), argv.end());
    return runCommand(env);
  }

  std::string module, blobs, root, stateDir, log, bundle;
  pid_t pid = -1;
  int pushes = 0;
  NodeStatus last;
};

TEST_P(ServiceStatus, ACrashRestartShowsWithinSecondsWithNoCycleAndAnIdleNodeWritesNothing) {
  startNode();
  pushDecl(decl(1));
  ASSERT_TRUE(awaitStatus([](const NodeStatus& s) {
    return s.serial == 1 && s.appliedCycle && svc(s) && svc(s)->running && svc(s)->upSinceMs > 0;
  }));
  const NodeStatus before = last;
  const Service s0 = *svc(before);
  EXPECT_EQ(s0.id, module + ".svc");
  EXPECT_EQ(s0.unit, module + ".service");
  EXPECT_EQ(s0.health, "");
  EXPECT_LE(s0.upSinceMs, before.appliedCycle->atMs) << "started by the cycle that applied it";

  // Killed the way a crash would be (under systemd through it: its services live in
  // the namespace's own pids).
  const auto killedAt = Clock::now();
  if (GetParam() == "systemd") {
    ASSERT_EQ(
        e2e::SystemdNamespace::instance().ctl({"kill", "--signal=KILL", module + ".service"}).code,
        0);
  } else {
    pid_t service = 0;
    std::ifstream(root + "/svc.pid") >> service;
    ASSERT_GT(service, 0);
    ASSERT_EQ(::kill(service, SIGKILL), 0);
  }
  ASSERT_TRUE(awaitStatus(
      [&](const NodeStatus& s) {
        return svc(s) && svc(s)->running && svc(s)->upSinceMs > s0.upSinceMs &&
               svc(s)->restartsByCrash == s0.restartsByCrash + 1;
      },
      10s));
  const auto shownMs =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - killedAt).count();
  std::fprintf(stderr, "[services] %s: a crash restart shown in etcd after %lld ms\n",
               GetParam().c_str(), static_cast<long long>(shownMs));
  EXPECT_LT(shownMs, 6000);
  EXPECT_EQ(last.cycle, before.cycle) << "no cycle ran: the look between cycles saw it";
  EXPECT_EQ(svc(last)->restartsByMeshHost, s0.restartsByMeshHost);
  EXPECT_GT(svc(last)->upSinceMs, last.appliedCycle->atMs) << "started by no cycle";

  // Idle, its service steady: three looks (kLookEvery, 2 s) and no put.
  auto range = client->getPrefix(keys.status("n1"));
  ASSERT_EQ(range.kvs.size(), 1u);
  bool put = false;
  client->watch(
      keys.status("n1"), range.revision + 1,
      [&](const std::vector<EtcdEvent>& events) {
        put = put || !events.empty();
        return !put;
      },
      6500ms);
  EXPECT_FALSE(put) << "an idle node with unchanged services wrote its status";
}

TEST_P(ServiceStatus, AHealthCheckJudgesTheRunAndStatusExitsOneWhileItFails) {
  std::ofstream(root + "/ok") << "";
  startNode();
  pushDecl(decl(
      1, R"(health = { exec = "{bundle}/bin/check {root}", interval = "1s", timeout = "1s" })"));
  ASSERT_TRUE(
      awaitStatus([](const NodeStatus& s) { return svc(s) && svc(s)->health == "healthy"; }));
  Result st = localStatus(true);
  EXPECT_EQ(st.code, 0) << st.out << st.err;
  for (const auto& r : st.json().at("resources")) {
    if (r.at("id") == module + ".svc") {
      EXPECT_EQ(r.at("service").at("health"), "healthy") << r;
    }
  }

  fs::remove(root + "/ok");
  ASSERT_TRUE(
      awaitStatus([](const NodeStatus& s) { return svc(s) && svc(s)->health == "unhealthy"; }));
  EXPECT_EQ(svc(last)->healthReason, "exit 1: no ok file in " + root);
  EXPECT_TRUE(svc(last)->running) << "a failing check restarts nothing";
  EXPECT_EQ(svc(last)->restartsByCrash, 0);
  st = localStatus(false);
  EXPECT_EQ(st.code, 1) << st.out << st.err;
  EXPECT_NE(st.out.find(fmt::format("unhealthy {0}.svc ({0}): {0}.service runs, its health check "
                                    "fails: exit 1: no ok file in {1}",
                                    module, root)),
            std::string::npos)
      << st.out;
  EXPECT_NE(st.out.find("1 failing"), std::string::npos) << st.out;

  std::ofstream(root + "/ok") << "";
  ASSERT_TRUE(
      awaitStatus([](const NodeStatus& s) { return svc(s) && svc(s)->health == "healthy"; }));
  EXPECT_EQ(localStatus(false).code, 0);
}

TEST_P(ServiceStatus, ChangingOnlyTheHealthCheckRestartsNothing) {
  std::ofstream(root + "/ok") << "";
  startNode();
  pushDecl(decl(1));
  ASSERT_TRUE(
      awaitStatus([](const NodeStatus& s) { return s.serial == 1 && svc(s) && svc(s)->running; }));
  const Service s0 = *svc(last);
  pushDecl(decl(2, R"(health = { exec = "{bundle}/bin/check {root}", interval = "1s" })"));
  ASSERT_TRUE(awaitStatus(
      [](const NodeStatus& s) { return s.serial == 2 && svc(s) && svc(s)->health == "healthy"; }));
  EXPECT_EQ(last.updated + last.created, 0) << encodeStatus(last);
  EXPECT_EQ(svc(last)->upSinceMs, s0.upSinceMs);
  EXPECT_EQ(svc(last)->restartsByMeshHost, s0.restartsByMeshHost);
  pushDecl(decl(3, R"(health = { exec = "{bundle}/bin/check {root}", interval = "2s" })"));
  ASSERT_TRUE(awaitStatus([](const NodeStatus& s) { return s.serial == 3 && s.cycle > 0; }));
  EXPECT_EQ(last.updated + last.created, 0) << encodeStatus(last);
  EXPECT_EQ(svc(last)->upSinceMs, s0.upSinceMs);
  EXPECT_EQ(svc(last)->restartsByMeshHost, s0.restartsByMeshHost);
}

INSTANTIATE_TEST_SUITE_P(Backends, ServiceStatus, ::testing::Values("builtin", "systemd"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mesh::fleet::test
