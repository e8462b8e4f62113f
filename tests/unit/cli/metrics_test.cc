// The metrics file: node_exporter's textfile format, exactly.
#include "cli/metrics.hh"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "state/store.hh"

namespace mesh::cli {
namespace {

MetricsSnapshot sample() {
  MetricsSnapshot s;
  s.node = "lap\"top\\1\n";
  s.cycle = 17;
  s.generation = 3;
  s.durationSeconds = 0.008;
  s.lastCycleTimestampSeconds = 1700000000.5;
  s.tally.created = 1;
  s.tally.updated = 2;
  s.tally.unchanged = 12;
  s.tally.removed = 0;
  s.tally.failed = 1;
  s.churning = 1;
  s.restarts = {{"a.service", 4}, {"we\"ird.service", 1}};
  return s;
}

TEST(Metrics, EscapesLabelValues) {
  EXPECT_EQ(escapeLabelValue("plain"), "plain");
  EXPECT_EQ(escapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  // Issue 27: invalid UTF-8 would make a scraper refuse the file, an ESC would reach a
  // terminal: both shown escaped, their backslash escaped for the format.
  EXPECT_EQ(escapeLabelValue("evil\xff\x1b[2J"), "evil\\\\xff\\\\e[2J");
}

TEST(Metrics, RendersTextfileFormat) {
  const std::string expected =
      "# HELP mesh_host_cycle_duration_seconds How long the last cycle took.\n"
      "# TYPE mesh_host_cycle_duration_seconds gauge\n"
      "mesh_host_cycle_duration_seconds 0.008\n"
      "# HELP mesh_host_last_cycle_timestamp_seconds When the last cycle finished, in unix "
      "seconds.\n"
      "# TYPE mesh_host_last_cycle_timestamp_seconds gauge\n"
      "mesh_host_last_cycle_timestamp_seconds 1700000000.500\n"
      "# HELP mesh_host_cycle The number of the last cycle, with the node and declaration "
      "generation it applied.\n"
      "# TYPE mesh_host_cycle gauge\n"
      "mesh_host_cycle{node=\"lap\\\"top\\\\1\\n\",generation=\"3\",interrupted=\"false\"} 17\n"
      "# HELP mesh_host_resources Resources by their outcome in the last cycle.\n"
      "# TYPE mesh_host_resources gauge\n"
      "mesh_host_resources{outcome=\"created\"} 1\n"
      "mesh_host_resources{outcome=\"updated\"} 2\n"
      "mesh_host_resources{outcome=\"unchanged\"} 12\n"
      "mesh_host_resources{outcome=\"removed\"} 0\n"
      "mesh_host_resources{outcome=\"released\"} 0\n"
      "mesh_host_resources{outcome=\"skipped\"} 0\n"
      "mesh_host_resources{outcome=\"failed\"} 1\n"
      "# HELP mesh_host_churning_resources Resources created or updated again and again while "
      "their declaration did not change.\n"
      "# TYPE mesh_host_churning_resources gauge\n"
      "mesh_host_churning_resources 1\n"
      "# HELP mesh_host_restarts_total Restarts mesh-host made, per service, since mesh-host "
      "first recorded the process.\n"
      "# TYPE mesh_host_restarts_total counter\n"
      "mesh_host_restarts_total{service=\"a.service\"} 4\n"
      "mesh_host_restarts_total{service=\"we\\\"ird.service\"} 1\n"
      "# HELP mesh_host_declaration_valid 0 while the declaration file does not load and the "
      "last good one stays in force.\n"
      "# TYPE mesh_host_declaration_valid gauge\n"
      "mesh_host_declaration_valid 1\n"
      "# HELP mesh_host_paused 1 while mesh-host pause is in force: the agent's cycles only "
      "plan.\n"
      "# TYPE mesh_host_paused gauge\n"
      "mesh_host_paused 0\n"
      "# HELP mesh_host_failures Resources that failed in the last cycle.\n"
      "# TYPE mesh_host_failures gauge\n"
      "mesh_host_failures 1\n";
  EXPECT_EQ(renderMetrics(sample()), expected);
}

TEST(Metrics, APauseAndWhatWaitsAreShown) {
  auto s = sample();
  s.paused = true;
  s.pendingChanges = 3;
  const std::string text = renderMetrics(s);
  EXPECT_NE(text.find("\nmesh_host_paused 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE mesh_host_pending_changes gauge\nmesh_host_pending_changes 3\n"),
            std::string::npos)
      << text;
}

TEST(Metrics, EveryMetricHasHelpAndType) {
  std::istringstream in(renderMetrics(sample()));
  std::set<std::string> helped, typed, sampled;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# HELP ", 0) == 0)
      helped.insert(line.substr(7, line.find(' ', 7) - 7));
    else if (line.rfind("# TYPE ", 0) == 0)
      typed.insert(line.substr(7, line.find(' ', 7) - 7));
    else
      sampled.insert(line.substr(0, line.find_first_of("{ ")));
  }
  EXPECT_EQ(helped, typed);
  for (const auto& name : sampled) EXPECT_TRUE(helped.count(name)) << name;
  EXPECT_EQ(helped.size(), 9u);  // mesh_host_paused included
}

TEST(Metrics, WritesTheFileFromAStoreAndAReport) {
  char tmpl[] = "/tmp/mesh-metrics.XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  auto store = state::Store::open(dir + "/state");
  const int64_t gen = store.recordGeneration("sha256:aa", "text", 1000);
  const int64_t cycle = store.beginCycle(1000, gen);
  state::Record proc;
  proc.id = "m.run";
  proc.module = "m";
  proc.kind = "process";
  proc.observed = R"({"tree":"","service":"m.service","restarts":3})";
  store.putRecord(proc);
  store.finishCycle({cycle, 1000, 2000, gen, Tally{.unchanged = 1}, 5});
  apply::CycleReport report;
  report.cycle = cycle;
  report.tally.unchanged = 1;
  report.ms = 5;

  const std::string path = dir + "/textfile/mesh_host.prom";
  writeMetrics(path, report, store, "n1");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("mesh_host_restarts_total{service=\"m.service\"} 3\n"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("mesh_host_last_cycle_timestamp_seconds 2.000\n"), std::string::npos);
  EXPECT_NE(
      text.str().find("mesh_host_cycle{node=\"n1\",generation=\"1\",interrupted=\"false\"} 1"),
      std::string::npos);
  EXPECT_NE(text.str().find("mesh_host_resources{outcome=\"unchanged\"} 1\n"), std::string::npos);
  EXPECT_NE(text.str().find("mesh_host_declaration_valid 1\n"), std::string::npos);

  // The agent keeps back a declaration that does not load: the next metrics say so.
  state::noteDeclarationError(dir + "/state", {1, "/etc/decl.toml", "decl.toml:1:1: bad", true});
  EXPECT_FALSE(metricsSnapshot(report, store, "n1").declarationValid);
  EXPECT_NE(
      renderMetrics(metricsSnapshot(report, store, "n1")).find("mesh_host_declaration_valid 0\n"),
      std::string::npos);
  // Written atomically: no temp file left beside it.
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir + "/textfile"))
    ++files;
  EXPECT_EQ(files, 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mesh::cli
