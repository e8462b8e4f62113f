// Issue 27.1 and 27.2: bytes from outside — a service's last output line holding \377, ESC,
// CR and U+202E (its failure reason), a file name `evil\xff…` a local user plants in an
// archive's directory, a node name — driven through every local output: apply, plan,
// status, history, generations (text and --json), the metrics file, and the agent's text
// and JSON logs and its journald fields. Each must run to its end (no "internal error",
// the agent alive), its JSON must parse with U+FFFD where the bad byte was, the metrics
// file must stay in the exposition format, and no raw ESC, CR, other control or invalid
// byte may reach a terminal. (The fleet commands and page: tests/fleet/.)
#include <fmt/format.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "../support/raw_bytes.hh"
#include "agent_process.hh"
#include "harness.hh"
#include "systemd_env.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

using namespace std::chrono_literals;
using test::nothingRaw;
using test::Shown;

// \377, ESC, CR and U+202E, and what JSON makes of them (U+FFFD for the byte that is not
// UTF-8) and the terminal (each escaped).
const std::string kBytes = "\xff\x1b[2J\r\xe2\x80\xae";
const std::string kInJson = "\xef\xbf\xbd\x1b[2J\r\xe2\x80\xae";
const std::string kShown = "\\xff\\e[2J\\r\\u{202e}";

// A service that fails, its last output line holding the bytes.
const std::string kService =
    "#!/bin/sh\nprintf 'crash \\377 \\033[2J\\033[Hconverged \\342\\200\\256 \\302\\233 \\r\\n'\n"
    "exit 1\n";

// Whether `text` is in the Prometheus text exposition format (0.0.4), as node_exporter's
// textfile collector reads it: comment lines, and samples `name{label="value",…} number`
// whose label values are UTF-8 with only \\, \" and \n escaped.
::testing::AssertionResult exposition(const std::string& text) {
  if (auto raw = nothingRaw(text, Shown::Text); !raw) return raw;
  static const std::regex comment(R"(# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*)");
  static const std::regex type(R"(# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|untyped))");
  static const std::regex name(R"([a-zA-Z_:][a-zA-Z0-9_:]*)");
  static const std::regex label(R"([a-zA-Z_][a-zA-Z0-9_]*)");
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const auto bad = [&](const char* why) {
      return ::testing::AssertionFailure() << "line " << n << ": " << why << ": " << line;
    };
    if (line.starts_with("#")) {
      if (!std::regex_match(line, comment)) return bad("not a HELP or TYPE line");
      if (line.starts_with("# TYPE") && !std::regex_match(line, type)) return bad("bad TYPE");
      continue;
    }
    size_t i = line.find_first_of("{ ");
    if (i == std::string::npos || !std::regex_match(line.substr(0, i), name))
      return bad("no metric name");
    if (line[i] == '{') {
      for (++i; line[i] != '}';) {
        const size_t eq = line.find("=\"", i);
        if (eq == std::string::npos || !std::regex_match(line.substr(i, eq - i), label))
          return bad("no label name");
        for (i = eq + 2; i < line.size() && line[i] != '"'; ++i)
          if (line[i] == '\\' &&
              (++i >= line.size() || std::string("\\\"n").find(line[i]) == std::string::npos))
            return bad("a backslash that escapes nothing the format escapes");
        if (i >= line.size()) return bad("an unterminated label value");
        ++i;
        if (line[i] == ',')
          ++i;
        else if (line[i] != '}')
          return bad("no ',' or '}' after a label");
      }
      ++i;
    }
    if (i >= line.size() || line[i] != ' ') return bad("no value");
    char* end = nullptr;
    std::strtod(line.c_str() + i + 1, &end);
    if (end == line.c_str() + i + 1 || *end != '\0') return bad("the value is no number");
  }
  return ::testing::AssertionSuccess();
}

// Every line of a JSON log parses, and none holds a raw byte.
void expectJsonLines(const std::string& what, const std::string& log) {
  EXPECT_TRUE(nothingRaw(log, Shown::Json)) << what;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line))
    EXPECT_FALSE(nlohmann::json::parse(line, nullptr, false).is_discarded())
        << what << ": a line that is not JSON: " << line;
}

class Bytes : public Node {
 protected:
  void SetUp() override {
    Node::SetUp();
    extraArgs = {"--supervisor", "builtin"};
  }
  void TearDown() override {
    apply(declare("node = \"test\"\nempty = true\n", "empty.toml"));
    Node::TearDown();
  }

  // An archive over a directory where a local user planted a file whose name holds the
  // bytes (the archive fails, naming it), and a service that fails with them.
  std::string hostileDeclaration() {
    const std::string svc =
        publish(makeArchive({{"bin/svc", kService}}, "chmod 755 bin/svc && tar -cf out bin"));
    const std::string site =
        publish(makeArchive({{"index.html", "<p>site</p>\n"}}, "tar -cf out index.html"));
    fs::create_directories(at("/srv/app"));
    std::ofstream(at("/srv/app/evil" + kBytes)) << "x";
    return declare(fmt::format(R"(
[module.m.archive.app]
path = "/srv/app"
bundle = "{}"

[module.m.process.svc]
bundle = "{}"
unit = {{ ExecStart = "{{bundle}}/bin/svc" }}
)",
                               site, svc));
  }

  // `mesh-host run` over `decl` in the fixture's root, as node `node`.
  std::vector<std::string> agentArgv(const std::string& decl, const std::string& node,
                                     const std::string& format, const std::string& metrics) const {
    return {MESH_HOST_BIN, "run",  "--declaration", decl,   "--interval",   "1h",
            "--splay",     "0",    "--root",        root,   "--blobs",      blobs,
            "--node",      node,   "--log-format",  format, "--supervisor", "builtin",
            "--metrics",   metrics};
  }
};

TEST_F(Bytes, HostileBytesThroughEveryLocalOutputNeverCrashOrReachTheTerminalRaw) {
  const std::string decl = hostileDeclaration();
  const std::string metrics = work + "/metrics.prom";
  Result applied = mesh({"apply", decl, "--json", "--metrics", metrics});
  EXPECT_EQ(applied.code, 1) << applied.out << applied.err;
  const auto report = applied.json();
  EXPECT_EQ(outcomeOf(report, "m.app")["outcome"], "failed") << applied.out;
  EXPECT_NE(outcomeOf(report, "m.app")["reason"].get<std::string>().find("evil" + kInJson),
            std::string::npos)
      << applied.out;
  EXPECT_EQ(outcomeOf(report, "m.svc")["outcome"], "failed") << applied.out;
  EXPECT_NE(outcomeOf(report, "m.svc")["reason"].get<std::string>().find("crash \xef\xbf\xbd"),
            std::string::npos)
      << applied.out;
  EXPECT_TRUE(nothingRaw(applied.out, Shown::Json)) << "apply --json";
  EXPECT_TRUE(nothingRaw(applied.err, Shown::Text)) << "apply --json, stderr";
  EXPECT_TRUE(exposition(slurp(metrics))) << "the metrics file";

  Result text = mesh({"apply", decl});
  EXPECT_EQ(text.code, 1) << text.out << text.err;
  EXPECT_TRUE(nothingRaw(text.out + text.err, Shown::Text)) << "apply";
  EXPECT_NE(text.out.find("evil" + kShown), std::string::npos) << text.out;

  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"plan", decl}, {"status"}, {"history"}, {"history", "m.app"}, {"generations"}}) {
    const std::string what = fmt::format("{}", fmt::join(args, " "));
    Result r = mesh(args);
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << what << ": " << r.err;
    EXPECT_NE(r.code, 134) << what;
    EXPECT_NE(r.code, 139) << what;
    EXPECT_TRUE(nothingRaw(r.out + r.err, Shown::Text)) << what;
    auto withJson = args;
    withJson.push_back("--json");
    Result j = mesh(withJson);
    EXPECT_EQ(j.err.find("internal error"), std::string::npos) << what << " --json: " << j.err;
    EXPECT_FALSE(j.json().contains("error")) << what << " --json: " << j.out;
    EXPECT_TRUE(nothingRaw(j.out, Shown::Json)) << what << " --json";
    EXPECT_TRUE(nothingRaw(j.err, Shown::Text)) << what << " --json, stderr";
  }
}

// The agent, in each log format, as a node whose name holds the bytes too: it runs its
// cycle, lives, logs each failure with the bytes replaced (JSON) or escaped (text), writes
// a metrics file that stays in the exposition format, and stops cleanly on SIGTERM.
TEST_F(Bytes, TheAgentsLogsAndMetricsCarryHostileBytesSafelyAndTheAgentLives) {
  const std::string decl = hostileDeclaration();
  const std::string node = "evil" + kBytes + "\"q\\";
  for (const std::string format : {"json", "text"}) {
    SCOPED_TRACE(format);
    const std::string metrics = work + "/run-" + format + ".prom";
    AgentProcess agent(agentArgv(decl, node, format, metrics), {});
    if (format == "json") {
      const auto summary = agent.nextSummary(60s);
      ASSERT_TRUE(summary) << agent.log();
      EXPECT_EQ((*summary)["failed"], 2) << agent.log();
      expectJsonLines("the JSON log", agent.log());
      bool sawArchive = false, sawService = false;
      for (const auto& j : agent.lines()) {
        const std::string reason = j.value("reason", "");
        sawArchive |= j.value("id", "") == "m.app" && reason.find("evil" + kInJson) != reason.npos;
        sawService |=
            j.value("id", "") == "m.svc" && reason.find("crash \xef\xbf\xbd") != reason.npos;
      }
      EXPECT_TRUE(sawArchive) << agent.log();
      EXPECT_TRUE(sawService) << agent.log();
    } else {
      ASSERT_TRUE(agent.waitForText(" 2 failed", 60s)) << agent.log();
      EXPECT_TRUE(nothingRaw(agent.log(), Shown::Text)) << "the text log";
      EXPECT_NE(agent.log().find("evil" + kShown), std::string::npos) << agent.log();
      EXPECT_NE(agent.log().find("crash \\xff \\e[2J\\e[Hconverged \\u{202e} \\xc2\\x9b"),
                std::string::npos)
          << agent.log();
    }
    EXPECT_FALSE(agent.waitExit(0ms)) << "the agent ended: " << agent.log();
    const std::string prom = slurp(metrics);
    EXPECT_TRUE(exposition(prom)) << "the metrics file";
    EXPECT_NE(prom.find(R"(node="evil\\xff\\e[2J\\r\\u{202e}\"q\\")"), std::string::npos) << prom;
    agent.signal(SIGTERM);
    EXPECT_EQ(agent.waitExit(30s), 0) << agent.log();
  }
}

// Under journald the agent sends native entries (sd_journal_sendv): every field journald
// stores must be text journalctl shows as a string — not a blob of bytes — with the
// hostile bytes escaped, and the message journalctl prints holds none of them raw. The
// agent runs as a unit of the namespace systemd (tests/systemd/sdns.sh) with its journald.
TEST_F(Bytes, JournaldGetsEveryFieldAsEscapedText) {
  std::string why;
  if (!SystemdNamespace::available(&why)) GTEST_SKIP() << why;
  auto& ns = SystemdNamespace::instance();
  const std::string decl = hostileDeclaration();
  const std::string unit = "mesh-bytes-" + std::to_string(::getpid()) + ".service";
  std::string exec;
  for (const auto& a : agentArgv(decl, "test", "text", work + "/journal.prom"))
    exec += (exec.empty() ? "" : " ") + a;
  std::ofstream(ns.unitDir() + "/" + unit) << "[Service]\nType=notify\nExecStart=" << exec << "\n";
  ASSERT_EQ(ns.ctl({"daemon-reload"}).code, 0);
  Result started = ns.ctl({"start", unit});  // returns after the first cycle (READY=1)
  ASSERT_EQ(started.code, 0) << started.out << started.err;
  EXPECT_EQ(ns.ctl({"is-active", unit}).out, "active\n");

  const std::string nsDir = fs::path(ns.unitDir()).parent_path();
  const auto journal = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"bash",       SDNS_SCRIPT, "exec", nsDir,
                                     "journalctl", "-u",        unit,   "--no-pager"};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv);
  };
  runCommand({"bash", SDNS_SCRIPT, "exec", nsDir, "journalctl", "--sync"});
  Result entries = journal({"-o", "json"});
  ASSERT_EQ(entries.code, 0) << entries.err;
  std::istringstream in(entries.out);
  std::string line;
  std::map<std::string, std::string> failed;  // MESH_RESOURCE → MESH_REASON
  while (std::getline(in, line)) {
    const auto entry = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(entry.is_object()) << line;
    if (!entry.contains("MESH_OUTCOME")) continue;
    for (const auto& [field, value] : entry.items()) {
      if (!field.starts_with("MESH_") && field != "MESSAGE") continue;
      ASSERT_TRUE(value.is_string()) << field << " is stored as bytes, not text: " << line;
      EXPECT_TRUE(nothingRaw(value.get<std::string>(), Shown::Text)) << field << ": " << line;
    }
    if (entry["MESH_OUTCOME"] == "failed")
      failed[entry.value("MESH_RESOURCE", "")] = entry.value("MESH_REASON", "");
  }
  ASSERT_EQ(failed.size(), 2u) << entries.out;
  EXPECT_NE(failed["m.app"].find("evil" + kShown), std::string::npos) << failed["m.app"];
  EXPECT_NE(failed["m.svc"].find("crash \\xff \\e[2J"), std::string::npos) << failed["m.svc"];
  Result shown = journal({"-o", "cat"});
  EXPECT_TRUE(nothingRaw(shown.out, Shown::Text)) << "journalctl -o cat";

  EXPECT_EQ(ns.ctl({"is-active", unit}).out, "active\n") << "the agent ended";
  ns.ctl({"stop", unit});
  fs::remove(ns.unitDir() + "/" + unit);
  ns.ctl({"daemon-reload"});
}

}  // namespace
}  // namespace mesh::e2e
