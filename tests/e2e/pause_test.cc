// `mesh-host pause --reason TEXT` / `resume` and `run --noop` beside a running agent:
// while paused the agent's cycles only plan (an edit and drift are seen, shown in
// `status` and the metrics, and not applied), `apply` refuses with exit 5 unless
// --force; resume applies what was kept, once, with one restart per cause. The
// README's decommission recipe is run as written, with the agent running.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "agent_process.hh"
#include "process_fixture.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class Pause : public ProcessNode {
 protected:
  void SetUp() override {
    ProcessNode::SetUp();
    if (IsSkipped()) return;
    starts = work + "/starts";
    svc = publish(makeArchive({{"bin/svc", "#!/bin/sh\necho \"$(cat \"$MESH_CONFIG\")\" >> " +
                                               starts + "\nexec sleep 100000\n"}},
                              "chmod 755 bin/svc && tar -cf out bin"));
    metrics = work + "/metrics.prom";
  }

  std::string textOf(const std::string& config) const {
    return fmt::format(R"(
[module.{0}.file.config]
path = "/etc/{0}/config"
content = "{1}"

[module.{0}.process.runtime]
bundle = "{2}"
restart-on = ["{0}.config"]
unit = {{ ExecStart = "{{bundle}}/bin/svc", Restart = "always", Environment = ["MESH_CONFIG={{root}}/etc/{0}/config"] }}
)",
                       module, config, svc);
  }

  std::unique_ptr<AgentProcess> startAgent(const std::string& decl,
                                           std::vector<std::string> more = {}) {
    auto argv = agentArgv(decl, "1h");
    argv.insert(argv.end(), {"--metrics", metrics});
    argv.insert(argv.end(), more.begin(), more.end());
    return std::make_unique<AgentProcess>(argv, extraEnv);
  }

  // The next summary of a cycle that only planned (paused, --noop).
  static std::optional<Json> nextPlanned(AgentProcess& agent, const std::string& trigger = "") {
    return agent.waitFor(
        [&](const Json& j) {
          return j.value("planned", false) && j.contains("interrupted") &&
                 (trigger.empty() || j.value("trigger", "") == trigger);
        },
        30s);
  }

  std::vector<std::string> startLines() const {
    std::ifstream in(starts);
    std::vector<std::string> out;
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  }
  // A start's line is written by the service just after its start returns.
  void awaitStarts(size_t n) const {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (startLines().size() < n && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(10ms);  // a poll interval, bounded by the deadline
  }

  std::string config() const { return "/etc/" + module + "/config"; }

  std::string starts, svc, metrics;
};

TEST_P(Pause, PausedAgentKeepsAnEditAndDriftAndResumeAppliesThemOnce) {
  const auto decl = declare(textOf("v0"));
  auto agent = startAgent(decl);
  auto first = agent->nextSummary(30s, "start");
  ASSERT_TRUE(first) << agent->log();
  ASSERT_EQ((*first)["failed"], 0) << agent->log();
  awaitStarts(1);
  ASSERT_EQ(startLines(), std::vector<std::string>{"v0"});

  Result paused = mesh({"pause", "--reason", "maintenance window"});
  ASSERT_EQ(paused.code, 0) << paused.out << paused.err;
  EXPECT_NE(paused.out.find("paused by "), std::string::npos) << paused.out;
  EXPECT_NE(paused.out.find("maintenance window"), std::string::npos) << paused.out;
  // Seen at once: the agent logs it and plans a cycle for it.
  ASSERT_TRUE(nextPlanned(*agent, "paused")) << agent->log();

  // An edit, then drift: each seen, planned, not applied.
  std::ofstream(decl + ".tmp", std::ios::trunc) << textOf("v1");
  fs::rename(decl + ".tmp", decl);
  auto edit = nextPlanned(*agent, "declaration changed");
  ASSERT_TRUE(edit) << agent->log();
  EXPECT_EQ((*edit)["updated"], 2) << edit->dump();  // the file, and its restart-on process
  EXPECT_EQ(read(config()), "v0");
  write(config(), "drifted");
  auto drift = nextPlanned(*agent);
  ASSERT_TRUE(drift) << agent->log();
  EXPECT_TRUE((*drift)["trigger"].get<std::string>().starts_with("drift: ")) << drift->dump();
  EXPECT_EQ(read(config()), "drifted");

  // status: paused, by whom, since when, why; what waits; no cycle recorded meanwhile.
  Result st = mesh({"status", "--json"});
  const auto j = st.json();
  EXPECT_EQ(j["cycles"], 1) << st.out;
  ASSERT_TRUE(j["paused"].is_object()) << st.out;
  EXPECT_EQ(j["paused"]["reason"], "maintenance window");
  EXPECT_EQ(j["paused"]["uid"], static_cast<int64_t>(::getuid()));
  EXPECT_FALSE(j["paused"]["user"].get<std::string>().empty());
  EXPECT_FALSE(j["paused"]["since"].get<std::string>().empty());
  ASSERT_TRUE(j["pending"].is_object()) << st.out;
  EXPECT_EQ(j["pending"]["why"], "paused");
  bool configPending = false;
  for (const auto& c : j["pending"]["changes"])
    configPending = configPending || (c["id"] == module + ".config" && c["outcome"] == "updated");
  EXPECT_TRUE(configPending) << st.out;
  Result text = mesh({"status"});
  EXPECT_NE(text.out.find("paused by "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(": maintenance window;"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("would be updated " + module + ".config"), std::string::npos) << text.out;
  const std::string m = slurp(metrics);
  EXPECT_NE(m.find("\nmesh_host_paused 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\nmesh_host_pending_changes 2\n"), std::string::npos) << m;
  EXPECT_NE(m.find("mesh_host_cycle{node=\"test\",generation=\"1\",interrupted=\"false\"} 1"),
            std::string::npos)
      << m;

  // By hand: refused, exit 5, nothing applied.
  Result refused = apply(decl, false);
  EXPECT_EQ(refused.code, 5) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("maintenance window; nothing was applied"), std::string::npos)
      << refused.err;
  EXPECT_EQ(read(config()), "drifted");
  EXPECT_EQ(startLines().size(), 1u);

  // Resume: the edit is applied once, the service restarted once for it.
  Result resumed = mesh({"resume"});
  ASSERT_EQ(resumed.code, 0) << resumed.out << resumed.err;
  EXPECT_NE(resumed.out.find("resumed: was paused by "), std::string::npos) << resumed.out;
  auto applied = agent->nextSummary(30s, "resumed");
  ASSERT_TRUE(applied) << agent->log();
  EXPECT_EQ((*applied)["updated"], 2) << applied->dump();
  EXPECT_EQ(read(config()), "v1");
  awaitStarts(2);
  agent->signal(SIGHUP);  // a barrier: any cycle the resume asked for came before it
  auto after = agent->nextSummary(30s, "SIGHUP");
  ASSERT_TRUE(after) << agent->log();
  EXPECT_EQ((*after)["updated"], 0) << after->dump();
  EXPECT_EQ((*after)["created"], 0) << after->dump();
  EXPECT_EQ(startLines(), (std::vector<std::string>{"v0", "v1"}));
  Result again = mesh({"status", "--json"});
  EXPECT_TRUE(again.json()["paused"].is_null()) << again.out;
  EXPECT_TRUE(again.json()["pending"].is_null()) << again.out;
  EXPECT_NE(slurp(metrics).find("\nmesh_host_paused 0\n"), std::string::npos) << slurp(metrics);
  agent->signal(SIGTERM);
  EXPECT_EQ(agent->waitExit(30s), 0) << agent->log();
}

TEST_P(Pause, APauseOutlivesTheAgent) {
  Result paused = mesh({"pause", "--reason", "before the first start"});
  ASSERT_EQ(paused.code, 0) << paused.out << paused.err;
  const auto decl = declare(textOf("v0"));
  for (int round = 0; round < 2; ++round) {
    auto agent = startAgent(decl);
    auto planned = nextPlanned(*agent, "start");
    ASSERT_TRUE(planned) << agent->log();
    EXPECT_EQ((*planned)["created"], 2) << planned->dump();
    EXPECT_FALSE(fs::exists(at(config()))) << "round " << round;
    agent->signal(SIGTERM);
    ASSERT_EQ(agent->waitExit(30s), 0) << agent->log();
  }
  EXPECT_FALSE(fs::exists(starts));
  Result st = mesh({"status"});
  EXPECT_NE(st.out.find("before the first start"), std::string::npos) << st.out << st.err;
  ASSERT_EQ(mesh({"resume"}).code, 0);
  auto agent = startAgent(decl);
  auto first = agent->nextSummary(30s, "start");
  ASSERT_TRUE(first) << agent->log();
  EXPECT_EQ((*first)["created"], 2) << first->dump();
  EXPECT_EQ(read(config()), "v0");
  agent->signal(SIGTERM);
  EXPECT_EQ(agent->waitExit(30s), 0) << agent->log();
}

TEST_P(Pause, ANoopAgentNeverChangesAFile) {
  const auto decl = declare(textOf("v0"));
  ASSERT_EQ(apply(decl).code, 0);
  awaitStarts(1);
  std::ofstream(decl, std::ios::trunc) << textOf("v1");
  const auto before = snapshotTree(root, {"var"});
  auto agent = startAgent(decl, {"--noop"});
  auto planned = nextPlanned(*agent, "start");
  ASSERT_TRUE(planned) << agent->log();
  EXPECT_EQ((*planned)["updated"], 2) << planned->dump();
  EXPECT_NE((*planned)["msg"].get<std::string>().find("nothing applied (run --noop)"),
            std::string::npos)
      << planned->dump();
  EXPECT_EQ(snapshotTree(root, {"var"}), before);
  write(config(), "drifted");
  auto drift = nextPlanned(*agent);
  ASSERT_TRUE(drift) << agent->log();
  EXPECT_EQ(read(config()), "drifted");
  Result st = mesh({"status", "--json"});
  EXPECT_EQ(st.json()["cycles"], 1) << st.out;
  EXPECT_TRUE(st.json()["paused"].is_null()) << st.out;
  EXPECT_EQ(st.json()["pending"]["why"], "noop") << st.out;
  Result text = mesh({"status"});
  EXPECT_NE(text.out.find("pending (run --noop, planned "), std::string::npos) << text.out;
  EXPECT_NE(slurp(metrics).find("\nmesh_host_pending_changes 2\n"), std::string::npos)
      << slurp(metrics);
  agent->signal(SIGTERM);
  EXPECT_EQ(agent->waitExit(30s), 0) << agent->log();
  EXPECT_EQ(startLines().size(), 1u);
}

TEST_P(Pause, TheCommandsAnswerAsDocumented) {
  const auto decl = declare(textOf("v0"));
  Result noReason = mesh({"pause"});
  EXPECT_EQ(noReason.code, 2) << noReason.out << noReason.err;
  Result blank = mesh({"pause", "--reason", "  "});
  EXPECT_EQ(blank.code, 2) << blank.out << blank.err;
  EXPECT_NE(blank.err.find("--reason: say why"), std::string::npos) << blank.err;
  Result notPaused = mesh({"resume"});
  EXPECT_EQ(notPaused.code, 0);
  EXPECT_NE(notPaused.out.find("not paused"), std::string::npos) << notPaused.out;

  ASSERT_EQ(mesh({"pause", "--reason", "first"}).code, 0);
  Result twice = mesh({"pause", "--reason", "second", "--json"});
  EXPECT_EQ(twice.code, 0);
  EXPECT_EQ(twice.json()["paused"]["reason"], "first") << twice.out;
  EXPECT_EQ(twice.json()["changed"], false) << twice.out;

  Result refused = apply(decl);  // --json
  EXPECT_EQ(refused.code, 5) << refused.out << refused.err;
  EXPECT_EQ(refused.json()["applied"], false) << refused.out;
  EXPECT_EQ(refused.json()["paused"]["reason"], "first") << refused.out;
  EXPECT_FALSE(fs::exists(at(config())));
  Result planned = plan(decl);
  EXPECT_EQ(planned.code, 3) << planned.out << planned.err;  // plan changes nothing: allowed
  Result forced = mesh({"apply", decl, "--force"});
  EXPECT_EQ(forced.code, 0) << forced.out << forced.err;
  EXPECT_NE(forced.err.find("apply --force: applying anyway"), std::string::npos) << forced.err;
  EXPECT_EQ(read(config()), "v0");
  Result rollback = mesh({"rollback", "1"});
  EXPECT_EQ(rollback.code, 5) << rollback.out << rollback.err;
  Result st = mesh({"status", "--json"});
  EXPECT_EQ(st.json()["paused"]["reason"], "first") << st.out;  // --force kept the pause
  EXPECT_EQ(st.code, 0) << "paused is not failing: " << st.out;
  ASSERT_EQ(mesh({"resume"}).code, 0);
  EXPECT_FALSE(fs::exists(stateDir() + "/paused"));
}

// The README's decommission recipe, its block run as written beside a running agent (the
// block after `<!-- readme-example: decommission -->`): `sudo` dropped, this node's
// options added to each mesh-host command, the declaration's path this test's, and the
// purge left out (the agent is stopped as purge would). Before pause, writing the empty
// declaration raced the agent; now the agent only plans, and the apply removes
// everything without a start or a restart first.
std::string readmeBlock(const std::string& name) {
  const std::string text = slurp(std::string(MESH_SOURCE_DIR) + "/README.md");
  const auto marker = text.find("<!-- readme-example: " + name + " -->");
  if (marker == std::string::npos) return {};
  const auto body = text.find('\n', text.find("```", marker)) + 1;
  return text.substr(body, text.find("\n```", body) - body + 1);
}

void replaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

TEST_P(Pause, TheReadmeDecommissionRecipeRacesNoAgent) {
  std::string recipe = readmeBlock("decommission");
  ASSERT_NE(recipe.find("mesh-host pause"), std::string::npos) << recipe;
  const auto decl = declare(textOf("v0"));
  auto agent = startAgent(decl);
  ASSERT_TRUE(agent->nextSummary(30s, "start")) << agent->log();
  awaitStarts(1);
  const size_t seen = agent->lines().size();

  std::string script;
  for (size_t at = 0, end; at < recipe.size(); at = end + 1) {
    end = recipe.find('\n', at);
    std::string line = recipe.substr(at, end - at);
    if (line.find("apt purge") != std::string::npos) continue;
    replaceAll(line, "sudo ", "");
    replaceAll(line, "/etc/mesh-host/declaration.toml", decl);
    std::string node = " --root '" + root + "' --node test";
    replaceAll(line, "mesh-host pause", std::string(MESH_HOST_BIN) + " pause" + node);
    for (size_t i = 0; i + 1 < extraArgs.size(); i += 2)
      node += " " + extraArgs[i] + " '" + extraArgs[i + 1] + "'";
    replaceAll(line, "mesh-host apply",
               std::string(MESH_HOST_BIN) + " apply" + node + " --blobs '" + blobs + "'");
    script += line + "\n";
  }
  ASSERT_EQ(("\n" + script).find("\nmesh-host "), std::string::npos) << "a command left:\n"
                                                                     << script;
  Result ran = runCommand({"bash", "-euo", "pipefail", "-c", script}, extraEnv);
  ASSERT_EQ(ran.code, 0) << script << ran.out << ran.err;
  EXPECT_NE(ran.out.find("removed " + module + ".config"), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("removed " + module + ".runtime"), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find(": 0 created, 0 updated, 0 unchanged, 2 removed"), std::string::npos)
      << ran.out;
  EXPECT_FALSE(fs::exists(at(config())));
  agent->signal(SIGTERM);  // as `apt purge` stops it
  ASSERT_EQ(agent->waitExit(30s), 0) << agent->log();
  // The agent applied nothing after the pause, and the service never started again.
  for (size_t i = seen; i < agent->lines().size(); ++i)
    if (AgentProcess::isSummary(agent->lines()[i]))
      ADD_FAILURE() << "the agent applied a cycle after the pause: " << agent->lines()[i].dump();
  EXPECT_EQ(startLines().size(), 1u);
  ASSERT_EQ(mesh({"resume"}).code, 0);  // for TearDown's apply
}

INSTANTIATE_TEST_SUITE_P(Backends, Pause, ::testing::Values("builtin", "systemd"));

}  // namespace
}  // namespace mesh::e2e
