// Stopping and restarting the agent — SIGTERM, kill -9, `systemctl restart
// mesh-host` — restarts no managed service, with either backend; the agent's own
// unit passes `systemd-analyze verify` and, under a real systemd, starts (READY
// after the first cycle) and converges the node.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "agent_process.hh"
#include "process_fixture.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// packaging/mesh-host.service with its ExecStart replaced.
std::string agentUnit(const std::string& execStart) {
  const std::string unit = slurp(MESH_AGENT_UNIT);
  EXPECT_NE(unit.find("\nExecStart="), std::string::npos) << unit;
  return std::regex_replace(unit, std::regex("\nExecStart=[^\n]*"), "\nExecStart=" + execStart);
}

class AgentRestart : public ProcessNode {
 protected:
  std::unique_ptr<AgentProcess> startAgent(const std::string& decl) {
    return std::make_unique<AgentProcess>(agentArgv(decl, "1h"), extraEnv);
  }

  struct Running {
    int pid = 0;
    std::string since;
    bool operator==(const Running&) const = default;
  };
  Running running() {
    auto s = serviceStatus();
    EXPECT_TRUE(s.value("active", false)) << s.dump();
    return {s.value("pid", 0), s.value("since", std::string())};
  }

  // A new agent's first cycle: nothing changed, above all not the service.
  void expectQuietFirstCycle(AgentProcess& agent) {
    auto summary = agent.nextSummary(30s, "start");
    ASSERT_TRUE(summary) << agent.log();
    EXPECT_EQ((*summary)["created"], 0) << agent.log();
    EXPECT_EQ((*summary)["updated"], 0) << agent.log();
    EXPECT_EQ((*summary)["failed"], 0) << agent.log();
    for (const auto& j : agent.lines()) EXPECT_NE(j.value("id", ""), id()) << j.dump();
  }
};

TEST_P(AgentRestart, StoppingOrKillingTheAgentRestartsNoService) {
  const auto decl = declare(text());
  auto agent = startAgent(decl);
  auto first = agent->nextSummary(30s, "start");
  ASSERT_TRUE(first) << agent->log();
  ASSERT_EQ((*first)["failed"], 0) << agent->log();
  const Running before = running();
  ASSERT_GT(before.pid, 0);

  agent->signal(SIGTERM);
  ASSERT_EQ(agent->waitExit(30s), 0) << agent->log();
  EXPECT_EQ(running(), before) << "stopping the agent touched the service";
  agent = startAgent(decl);
  expectQuietFirstCycle(*agent);
  EXPECT_EQ(running(), before) << "after SIGTERM and a new agent";

  agent->signal(SIGKILL);
  ASSERT_EQ(agent->waitExit(30s), 128 + SIGKILL);
  agent = startAgent(decl);
  expectQuietFirstCycle(*agent);
  EXPECT_EQ(running(), before) << "after kill -9 and a new agent";
  agent->signal(SIGTERM);
  EXPECT_EQ(agent->waitExit(30s), 0) << agent->log();
}

// The by-hand step of docs/operating.md beside a running agent: edit the declaration,
// `mesh-host apply` it. The agent sees the apply's writes (drift) before its own
// debounce of the edit has fired; it must not put the declaration it loaded before
// the edit back over the one applied, and a by-hand apply's writes are not drift to
// repair: each edit restarts the service once (the service writes a line per start)
// and changes the file once (its record counts every change).
TEST_P(AgentRestart, AnEditAppliedByHandBesideTheAgentRestartsTheServiceOnce) {
  const std::string starts = work + "/starts";
  const std::string svc =
      publish(makeArchive({{"bin/svc", "#!/bin/sh\necho \"$(cat \"$MESH_CONFIG\")\" >> " + starts +
                                           "\nexec sleep 100000\n"}},
                          "chmod 755 bin/svc && tar -cf out bin"));
  const auto textOf = [&](int v) {
    return fmt::format(R"(
[module.{0}.file.config]
path = "/etc/{0}/config"
content = "v{1}"

[module.{0}.process.runtime]
bundle = "{2}"
restart-on = ["{0}.config"]
unit = {{ ExecStart = "{{bundle}}/bin/svc", Restart = "always", Environment = ["MESH_CONFIG={{root}}/etc/{0}/config"] }}
)",
                       module, v, svc);
  };
  const auto lines = [&] {
    std::ifstream in(starts);
    std::vector<std::string> out;
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  };
  // A start's line is written by the service just after its start returns.
  const auto awaitStarts = [&](size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (lines().size() < n && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(10ms);  // a poll interval, bounded by the deadline
  };
  const auto decl = declare(textOf(0));
  auto agent = startAgent(decl);
  auto first = agent->nextSummary(30s, "start");
  ASSERT_TRUE(first) << agent->log();
  ASSERT_EQ((*first)["failed"], 0) << agent->log();
  awaitStarts(1);

  // Five starts in all: systemd's default start limit (5 in 10 s) is not reached.
  constexpr int kEdits = 4;
  for (int v = 1; v <= kEdits; ++v) {
    std::ofstream(decl + ".tmp", std::ios::trunc) << textOf(v);
    fs::rename(decl + ".tmp", decl);
    Result applied = apply(decl);
    ASSERT_EQ(applied.code, 0) << applied.out << applied.err;
    // The agent takes the edit in, runs a cycle after it; SIGHUP's cycle is a barrier
    // behind every cycle the edit and the apply's writes asked for.
    ASSERT_TRUE(agent->waitFor(
        [](const Json& j) { return j.value("msg", "").starts_with("declaration changed: "); }, 10s))
        << agent->log();
    ASSERT_TRUE(agent->nextSummary(10s)) << agent->log();
    agent->signal(SIGHUP);
    ASSERT_TRUE(agent->nextSummary(10s, "SIGHUP")) << agent->log();
    awaitStarts(static_cast<size_t>(v) + 1);
    EXPECT_EQ(read("/etc/" + module + "/config"), fmt::format("v{}", v));
  }
  std::vector<std::string> want = {"v0"};
  for (int v = 1; v <= kEdits; ++v) want.push_back(fmt::format("v{}", v));
  EXPECT_EQ(lines(), want) << "one start per edit, each with its own config; agent log:\n"
                           << agent->log();
  const Json st = mesh({"status", "--json"}).json();
  for (const auto& r : st["resources"]) {
    if (r["id"] == module + ".config") {
      EXPECT_EQ(r["changes"], kEdits + 1)
          << "the file went back to an older declaration: " << r.dump();
    }
  }
  agent->signal(SIGTERM);
  EXPECT_EQ(agent->waitExit(30s), 0) << agent->log();
}

INSTANTIATE_TEST_SUITE_P(Backends, AgentRestart, ::testing::Values("builtin", "systemd"));

// The agent itself as a unit of the namespace systemd: Type=notify, so `start`
// returns only after READY=1, which comes after the first cycle.
class AgentUnit : public AgentRestart {
 protected:
  void TearDown() override {
    if (!IsSkipped()) {
      auto& ns = SystemdNamespace::instance();
      ns.ctl({"stop", "mesh-host.service"});
      fs::remove(ns.unitDir() + "/mesh-host.service");
      ns.ctl({"daemon-reload"});
    }
    AgentRestart::TearDown();
  }
};

TEST_P(AgentUnit, StartsUnderSystemdConvergesAndRestartsNoService) {
  auto& ns = SystemdNamespace::instance();
  const auto decl = declare(text());
  // Inside the namespace the bus and /etc/systemd/system are the defaults;
  // WatchdogSec=2 so that a keep-alive comes within the test.
  std::ofstream(ns.unitDir() + "/mesh-host.service") << std::regex_replace(
      agentUnit(fmt::format("{} run --root {} --blobs {} --node test --declaration {} "
                            "--supervisor systemd --interval 1h",
                            MESH_HOST_BIN, root, blobs, decl)),
      std::regex("\nWatchdogSec=[^\n]*"), "\nWatchdogSec=2");
  ASSERT_EQ(ns.ctl({"daemon-reload"}).code, 0);
  Result started = ns.ctl({"start", "mesh-host.service"});
  ASSERT_EQ(started.code, 0) << started.out << started.err;
  EXPECT_EQ(ns.ctl({"is-active", "mesh-host.service"}).out, "active\n");

  Result st = mesh({"status", "--json"});
  EXPECT_GE(st.json().value("cycles", 0), 1) << st.out << st.err;
  EXPECT_EQ(read("/etc/" + module + "/config"), "one");
  const Running before = running();
  ASSERT_GT(before.pid, 0);
  Result show = ns.ctl({"show", "-p", "StatusText", "--value", "mesh-host.service"});
  EXPECT_TRUE(show.out.starts_with("cycle 1: ")) << show.out;

  // WATCHDOG=1 every half WatchdogSec (2 s here): systemd records each keep-alive.
  auto lastPing = [&] {
    return ns.ctl({"show", "-p", "WatchdogTimestampMonotonic", "--value", "mesh-host.service"}).out;
  };
  const std::string readyPing = lastPing();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (lastPing() == readyPing && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(50ms);  // a poll interval, bounded by the deadline
  EXPECT_NE(lastPing(), readyPing) << "no WATCHDOG=1 within 5 s";
  EXPECT_EQ(ns.ctl({"is-active", "mesh-host.service"}).out, "active\n");

  ASSERT_EQ(ns.ctl({"restart", "mesh-host.service"}).code, 0);
  EXPECT_EQ(mesh({"status", "--json"}).json().value("cycles", 0), 2);
  EXPECT_EQ(running(), before) << "systemctl restart mesh-host restarted the service";
  show = ns.ctl({"show", "-p", "StatusText", "--value", "mesh-host.service"});
  EXPECT_TRUE(show.out.starts_with("cycle 2: 0 created, 0 updated, 3 unchanged")) << show.out;

  // Under journald each line carries its priority: the outcomes of cycle 1 are notices.
  const std::string nsDir = fs::path(ns.unitDir()).parent_path();
  runCommand({"bash", SDNS_SCRIPT, "exec", nsDir, "journalctl", "--sync"});
  Result journal = runCommand({"bash", SDNS_SCRIPT, "exec", nsDir, "journalctl", "-u",
                               "mesh-host.service", "-p", "notice", "-o", "cat", "--no-pager"});
  EXPECT_NE(journal.out.find("created " + module + ".runtime"), std::string::npos) << journal.out;
  EXPECT_EQ(journal.out.find("cycle 2:"), std::string::npos) << "info logged as notice";

  // Every outcome line is a native journal entry with fields to search by.
  Result created =
      runCommand({"bash", SDNS_SCRIPT, "exec", nsDir, "journalctl", "MESH_OUTCOME=created",
                  "MESH_RESOURCE=" + module + ".runtime", "-o", "json", "--no-pager"});
  ASSERT_EQ(created.code, 0) << created.err;
  const auto entry =
      nlohmann::json::parse(created.out.substr(0, created.out.find('\n')), nullptr, false);
  ASSERT_TRUE(entry.is_object()) << created.out;
  EXPECT_EQ(entry.value("MESH_MODULE", ""), module) << created.out;
  EXPECT_EQ(entry.value("MESH_KIND", ""), "process") << created.out;
  EXPECT_EQ(entry.value("MESH_CYCLE", ""), "1") << created.out;
  EXPECT_EQ(entry.value("_SYSTEMD_UNIT", ""), "mesh-host.service") << created.out;
  EXPECT_EQ(entry.value("PRIORITY", ""), "5") << created.out;
}

INSTANTIATE_TEST_SUITE_P(Systemd, AgentUnit, ::testing::Values("systemd"));

TEST(AgentUnitFile, PassesSystemdAnalyzeVerify) {
  if (runCommand({"sh", "-c", "command -v systemd-analyze"}).code != 0)
    GTEST_SKIP() << "systemd-analyze is not installed (scripts/install-deps)";
  char tmpl[] = "/tmp/mesh-agent-unit.XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string path = dir + "/mesh-host.service";
  std::ofstream(path) << agentUnit(std::string(MESH_HOST_BIN) +
                                   " run --declaration /etc/mesh-host/declaration.toml");
  const bool hadMarker = fs::exists("/run/systemd/systemd-units-load");
  // Any output at all is a failure: verify exits 0 on unknown keys and bad values.
  Result v = runCommand({"sh", "-c", "systemd-analyze verify --man=no '" + path + "' 2>&1"});
  if (!hadMarker) fs::remove("/run/systemd/systemd-units-load");
  fs::remove_all(dir);
  EXPECT_EQ(v.code, 0) << v.out;
  EXPECT_EQ(v.out, "");
}

}  // namespace
}  // namespace mesh::e2e
