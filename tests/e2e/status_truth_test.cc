// What `status` and `generations` say is what is true: a service waiting for
// Restart= is down, not "activating" and fine; a supervisor that cannot be
// reached fails the node; a running cycle is not the last one; crashes are
// counted for ever, as mesh-host's own restarts are; the node is named as it
// runs; a generation whose cycle failed is marked, skipped by `rollback` and not
// counted by `gc --keep`.
#include <fmt/format.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <tuple>
#include <utility>

#include "process_fixture.hh"
#include "state/lock.hh"
#include "state/store.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Waits up to `timeout` for `ok()`, polling the way an operator's script would.
template <typename F>
bool eventually(F ok, std::chrono::milliseconds timeout = 15s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (ok()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
}

class StatusTruth : public ProcessNode {
 protected:
  // The fixture's service, restarted by its supervisor `restartSec` after it dies.
  std::string withRestartSec(const std::string& config, const std::string& restartSec) const {
    std::string t = text(config);
    const std::string key = "Restart = \"always\"";
    t.replace(t.find(key), key.size(), key + ", RestartSec = \"" + restartSec + "\"");
    return t;
  }

  // Kills the service's main process the way a crash would.
  void crash() {
    if (GetParam() == "systemd") {
      ASSERT_EQ(SystemdNamespace::instance().ctl({"kill", "--signal=KILL", service()}).code, 0);
    } else {
      const int pid = serviceStatus()["pid"].get<int>();
      ASSERT_GT(pid, 0);
      ASSERT_EQ(::kill(pid, SIGKILL), 0);
    }
  }
};

// systemd's NRestarts starts again at every start or restart on request; so
// does the builtin supervisor's count. The record keeps what was counted before
// each restart mesh-host makes, so the crashes `status` shows never go down.
TEST_P(StatusTruth, CrashRestartsAreCountedForEverLikeMeshHostsOwn) {
  ASSERT_EQ(apply(declare(withRestartSec("one", "100ms"))).code, 0);
  for (int i = 1; i <= 2; ++i) {
    const int before = serviceStatus()["pid"].get<int>();
    crash();
    ASSERT_TRUE(eventually([&] {
      auto s = serviceStatus();
      return s["running"] == true && s["pid"].get<int>() != before &&
             s["restarts_by_crash"].get<int64_t>() == i;
    })) << serviceStatus().dump();
  }
  Result r = apply(declare(withRestartSec("two", "100ms")));  // restart-on: a restart by mesh-host
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  ASSERT_EQ(outcomeOf(r.json(), id())["restarted"], true) << r.out;
  auto s = serviceStatus();
  EXPECT_EQ(s["restarts_by_mesh_host"], 1) << s.dump();
  EXPECT_EQ(s["restarts_by_crash"], 2) << s.dump();

  crash();
  EXPECT_TRUE(eventually([&] { return serviceStatus()["restarts_by_crash"] == 3; }))
      << serviceStatus().dump();
}

// Between a crash and its RestartSec= restart nothing runs: `status` shows the
// state as it is (no pid, since when), calls the service down and exits 1.
TEST_P(StatusTruth, AServiceWaitingForRestartIsDown) {
  ASSERT_EQ(apply(declare(withRestartSec("one", "1h"))).code, 0);
  ASSERT_EQ(mesh({"status"}).code, 0);
  crash();
  ASSERT_TRUE(eventually([&] { return serviceStatus()["running"] == false; }))
      << serviceStatus().dump();
  auto s = serviceStatus();
  EXPECT_EQ(s["state"], "activating (auto-restart)") << s.dump();
  EXPECT_EQ(s["pid"], 0) << s.dump();
  Result st = mesh({"status"});
  EXPECT_EQ(st.code, 1) << st.out;
  EXPECT_NE(st.out.find(fmt::format("down {} ({}): {} is activating (auto-restart)", id(), module,
                                    service())),
            std::string::npos)
      << st.out;
  EXPECT_EQ(st.out.find("pid 0"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("1 failing"), std::string::npos) << st.out;
}

// The supervisor cannot be asked (here: a system bus that is not there): the
// services are unknown, and the node is failing, said once. Both backends: a node
// applied under systemd whose bus then goes away, and one applied under the builtin
// supervisor whose status is asked of an unreachable systemd.
TEST_P(StatusTruth, AnUnreachableSupervisorFailsStatus) {
  ASSERT_EQ(apply(declare(text())).code, 0);
  const auto before = std::pair(extraArgs, extraEnv);
  extraArgs = {"--supervisor", "systemd", "--unit-dir",
               GetParam() == "systemd" ? SystemdNamespace::instance().unitDir() : work + "/units"};
  extraEnv = {{"DBUS_SYSTEM_BUS_ADDRESS", "unix:path=" + work + "/no-bus"}};
  Result st = mesh({"status"});
  EXPECT_EQ(st.code, 1) << st.out << st.err;
  EXPECT_NE(st.out.find("error: the supervisor cannot be reached: "), std::string::npos) << st.out;
  Result js = mesh({"status", "--json"});
  EXPECT_EQ(js.code, 1);
  EXPECT_FALSE(js.json()["supervisor_error"].is_null()) << js.out;
  const auto status = js.json();  // held: a range over a temporary's member dangles
  for (const auto& r : status["resources"]) {
    if (r["id"] == id()) {
      EXPECT_EQ(r["service"]["state"], "unknown") << r.dump();
    }
  }
  std::tie(extraArgs, extraEnv) = before;
}

INSTANTIATE_TEST_SUITE_P(Backends, StatusTruth, ::testing::Values("builtin", "systemd"),
                         [](const auto& info) { return info.param; });

class NodeTruth : public Node {
 protected:
  std::string fileDecl(const std::string& content) const {
    return "[module.m.file.a]\npath = \"/etc/m/a\"\ncontent = \"" + content + "\"\n";
  }
};

// A cycle in progress (another mesh-host holds the state lock) is shown as
// running, beside the last one that finished; the same row with no one holding
// the lock is a cycle cut short, and fails the node.
TEST_F(NodeTruth, ARunningCycleIsNotTheLastOne) {
  ASSERT_EQ(apply(declare(fileDecl("one"))).code, 0);
  int64_t unfinished = 0;
  {
    auto lock = state::StateLock::acquire(stateDir(), state::StateLock::Kind::Exclusive);
    auto store = state::Store::open(stateDir());
    unfinished = store.beginCycle(1'700'000'000'000, 1, "test");
    ASSERT_EQ(unfinished, 2);

    Result st = mesh({"status"});
    EXPECT_EQ(st.code, 0) << st.out << st.err;
    EXPECT_NE(st.out.find("last cycle 1 at 20"), std::string::npos) << st.out;
    EXPECT_NE(st.out.find("; cycle 2 running since 2023-11-14T22:13:20"), std::string::npos)
        << st.out;
    Result js = mesh({"status", "--json"});
    EXPECT_EQ(js.code, 0) << js.out << js.err;
    auto j = js.json();
    EXPECT_EQ(j["last_cycle"]["cycle"], 1) << j.dump();
    EXPECT_NE(j["last_cycle"]["finished_at"], "") << j.dump();
    EXPECT_EQ(j["running_cycle"]["cycle"], 2) << j.dump();
    EXPECT_TRUE(j["interrupted_cycle"].is_null()) << j.dump();
  }
  Result st = mesh({"status"});
  EXPECT_EQ(st.code, 1) << st.out;
  EXPECT_NE(st.out.find("error: cycle 2 (started 2023-11-14T22:13:20"), std::string::npos)
      << st.out;
  EXPECT_NE(st.out.find("never finished"), std::string::npos) << st.out;
  EXPECT_EQ(mesh({"status", "--json"}).json()["interrupted_cycle"]["cycle"], 2);

  // The next cycle finishes: nothing is unfinished any more.
  ASSERT_EQ(apply(declare(fileDecl("one"))).code, 0);
  EXPECT_EQ(mesh({"status"}).code, 0);
}

// `status` without --node names the node as its cycles ran (--node), not by
// the hostname; --node still wins.
TEST_F(NodeTruth, StatusNamesTheNodeAsItRuns) {
  ASSERT_EQ(runCommand({MESH_HOST_BIN, "apply", declare(fileDecl("one")), "--root", root, "--blobs",
                        blobs, "--node", "web-7"})
                .code,
            0);
  Result st = runCommand({MESH_HOST_BIN, "status", "--root", root});
  EXPECT_EQ(st.code, 0) << st.out << st.err;
  EXPECT_NE(st.out.find("node web-7: "), std::string::npos) << st.out;
  Result js = runCommand({MESH_HOST_BIN, "status", "--json", "--root", root});
  EXPECT_EQ(js.json()["node"], "web-7") << js.out;
  EXPECT_NE(runCommand({MESH_HOST_BIN, "status", "--root", root, "--node", "other"})
                .out.find("node other: "),
            std::string::npos);
}

// A generation whose cycle failed is marked by `generations`; `rollback`
// without a number passes over it; `gc --keep` does not count it. A later
// cycle of the same declaration that converges makes it good again.
TEST_F(NodeTruth, AFailedGenerationIsMarkedSkippedAndNotKept) {
  const std::string missing = "sha256:" + std::string(64, 'b');
  const std::string broken = fileDecl("three") + "\n[module.m.archive.app]\npath = \"/opt/app\"\n" +
                             "bundle = \"" + missing + "\"\n";
  ASSERT_EQ(apply(declare(fileDecl("one"), "g1.toml")).code, 0);
  ASSERT_EQ(apply(declare(fileDecl("two"), "g2.toml")).code, 0);
  ASSERT_EQ(apply(declare(broken, "g3.toml")).code, 1);
  ASSERT_EQ(apply(declare(fileDecl("four"), "g4.toml")).code, 0);

  Result gens = mesh({"generations", "--json"});
  ASSERT_EQ(gens.code, 0) << gens.err;
  const auto g = gens.json()["generations"];
  ASSERT_EQ(g.size(), 4u) << gens.out;
  EXPECT_EQ(g[2]["health"], "failed") << g[2].dump();
  EXPECT_EQ(g[2]["good"], false);
  EXPECT_EQ(g[2]["last_cycle"], 3);
  EXPECT_EQ(g[2]["last_failed"], 1);
  for (int i : {0, 1, 3}) EXPECT_EQ(g[i]["health"], "converged") << g[i].dump();
  const std::string text = mesh({"generations"}).out;
  EXPECT_NE(text.find("g3.toml  FAILED: 1 failed in cycle 3"), std::string::npos) << text;
  EXPECT_NE(text.find("g4.toml  converged in cycle 4  (current)"), std::string::npos) << text;

  // Most recently applied: 4 (current), 3 (failed), 2 — keep 2 keeps 4 and 2.
  Result gc = mesh({"gc", "--keep", "2", "--dry-run", "--json"});
  ASSERT_EQ(gc.code, 0) << gc.out << gc.err;
  EXPECT_EQ(gc.json()["kept_generations"], nlohmann::json::array({4, 2})) << gc.out;

  Result back = mesh({"rollback"});
  ASSERT_EQ(back.code, 0) << back.out << back.err;
  EXPECT_NE(back.out.find("rollback: applying generation 2 (current: 4)"), std::string::npos)
      << back.out;
  EXPECT_EQ(read("/etc/m/a"), "two");

  // Named, it is applied all the same (and fails again).
  EXPECT_EQ(mesh({"rollback", "3"}).code, 1);
  // Nothing good before 2 but 1; before 1 nothing at all.
  ASSERT_EQ(mesh({"rollback", "1"}).code, 0);
  Result none = mesh({"rollback"});
  EXPECT_EQ(none.code, 2) << none.out << none.err;
  EXPECT_NE(none.err.find("generation 1 is the first one"), std::string::npos) << none.err;
}

// Every generation before the current one failed: `rollback` says so rather
// than landing on one of them.
TEST_F(NodeTruth, RollbackRefusesWhenNothingBeforeConverged) {
  const std::string missing = "sha256:" + std::string(64, 'c');
  const std::string broken = fileDecl("one") + "\n[module.m.archive.app]\npath = \"/opt/app\"\n" +
                             "bundle = \"" + missing + "\"\n";
  ASSERT_EQ(apply(declare(broken, "g1.toml")).code, 1);
  ASSERT_EQ(apply(declare(fileDecl("two"), "g2.toml")).code, 0);
  Result r = mesh({"rollback"});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("no generation before 2 converged: the 1 before it failed or never "
                       "finished a cycle"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(read("/etc/m/a"), "two");
}

}  // namespace
}  // namespace mesh::e2e
