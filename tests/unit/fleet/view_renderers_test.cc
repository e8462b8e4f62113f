// The renderers of one judged fleet (fleet/view/): `fleet status`'s text and its JSON (which
// `fleet serve` sends too) must say the same of every node — its name, the serials pushed
// and applied, its state, its failed resources and churning count, and each reason — and
// the same tally, so that an operator reading either never sees another verdict.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "fleet/view.hh"
#include "fleet/view/json.hh"
#include "fleet/view/text.hh"

namespace mesh::fleet {
namespace {

constexpr int64_t kNow = 1'800'000'000'000;

NodeStatus statusOf(int64_t serial, const std::string& digest) {
  NodeStatus s;
  s.serial = serial;
  s.declarationDigest = digest;
  s.publishedAtMs = kNow - 60'000;
  s.cycle = 4;
  return s;
}

NodeView nodeOf(const std::string& name, NodeState state, std::optional<NodeStatus> status) {
  NodeView v;
  v.node = name;
  v.state = state;
  v.up = state != NodeState::Down && state != NodeState::Forged;
  v.heartbeatMs = v.up ? kNow : 0;
  v.status = std::move(status);
  v.wanted = Statement{};
  v.wanted->serial = 3;
  v.wanted->declarationDigest = "sha256:" + std::string(64, 'b');
  v.wantedRevision = 40;
  return v;
}

FleetView aMixedFleet() {
  const std::string a = "sha256:" + std::string(64, 'a'), b = "sha256:" + std::string(64, 'b');
  FleetView v;
  v.cluster = "prod";
  v.revision = 41;
  v.nowMs = kNow;
  v.nodes.push_back(nodeOf("web-1", NodeState::Converged, statusOf(3, b)));
  auto behind = nodeOf("web-2", NodeState::Behind, statusOf(2, a));
  behind.reasons = {"behind: applied serial 2; serial 3 is pushed (revision 40)"};
  v.nodes.push_back(behind);
  auto failing = nodeOf("db-1", NodeState::Failing, statusOf(3, b));
  failing.status->failed = 2;
  failing.status->failing = {{"app.config", "no space"}, {"app.key", "denied"}};
  failing.reasons = {"failed app.config: no space", "failed app.key: denied"};
  failing.lastError = "no space";
  v.nodes.push_back(failing);
  auto churning = nodeOf("db-2", NodeState::Churning, statusOf(3, b));
  churning.status->churning = {"app.runtime", "app.sidecar", "app.cron"};
  churning.reasons = {"churning: app.runtime, app.sidecar, app.cron"};
  v.nodes.push_back(churning);
  auto down = nodeOf("cache-1", NodeState::Down, std::nullopt);
  down.wanted.reset();
  down.reasons = {"down: never seen (no status or seen key)"};
  v.nodes.push_back(down);
  auto forged = nodeOf("evil", NodeState::Forged, std::nullopt);
  forged.trust = "forged";
  forged.trustReason = "its status is not signed by its enrolled key";
  forged.reasons = {"forged: its status is not signed by its enrolled key"};
  v.nodes.push_back(forged);
  v.versions = {{b, 3, {"web-1", "db-1", "db-2"}, "mesh-op:abcdefghijk", kNow - 9000, true},
                {a, 2, {"web-2"}, "", 0, false},
                {"", std::nullopt, {"cache-1", "evil"}, "", 0, false}};
  return v;
}

std::vector<std::string> cellsOf(const std::string& row) {
  // Columns are padded with two spaces or more; a cell holds one space at most ("9s ago").
  static const std::regex gap(" {2,}");
  return {std::sregex_token_iterator(row.begin(), row.end(), gap, -1),
          std::sregex_token_iterator()};
}

std::string serialCell(const nlohmann::json& serial) {
  return serial.is_null() ? "-" : std::to_string(serial.get<int64_t>());
}

TEST(FleetView, TheTextAndTheJsonSayTheSameOfEachNode) {
  const FleetView view = aMixedFleet();
  const auto lines = fleetTextLines(view);
  const auto json = nlohmann::json::parse(fleetJsonText(view));
  ASSERT_EQ(json, fleetJson(view));
  const auto& nodes = json["nodes"];
  ASSERT_EQ(nodes.size(), view.nodes.size());
  ASSERT_GT(lines.size(), nodes.size() + 1);

  EXPECT_EQ(cellsOf(lines[0]).front(), "NODE");
  std::vector<std::string> reasons;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& n = nodes[i];
    const auto cells = cellsOf(lines[i + 1]);
    ASSERT_EQ(cells.size(), 8u) << lines[i + 1];
    SCOPED_TRACE(lines[i + 1]);
    EXPECT_EQ(cells[0], n["node"]);
    EXPECT_EQ(cells[1], serialCell(n["wanted_serial"]));
    EXPECT_EQ(cells[2], serialCell(n["applied_serial"]));
    EXPECT_EQ(cells[4], n["state"]);
    const bool hasStatus = !n["applied_revision"].is_null();
    EXPECT_EQ(cells[5], hasStatus ? std::to_string(n["failed"].get<int>()) : "-");
    EXPECT_EQ(cells[6], hasStatus ? std::to_string(n["churning"].size()) : "-");
    for (const auto& r : n["reasons"])
      reasons.push_back(n["node"].get<std::string>() + ": " + r.get<std::string>());
  }
  // After the table and a blank line: every node's reasons, in the JSON's order.
  ASSERT_EQ(lines[nodes.size() + 1], "");
  ASSERT_GE(lines.size(), nodes.size() + 2 + reasons.size());
  const std::vector<std::string> shown(
      lines.begin() + static_cast<long>(nodes.size()) + 2,
      lines.begin() + static_cast<long>(nodes.size() + 2 + reasons.size()));
  EXPECT_EQ(shown, reasons);

  // The tally: the JSON's summary, state by state.
  const auto& summary = json["summary"];
  std::string tally =
      "cluster prod at revision 41: " + std::to_string(summary["nodes"].get<int>()) + " node(s), " +
      std::to_string(summary["converged"].get<int>()) + " converged";
  for (const char* state :
       {"forged", "unenrolled", "down", "behind", "refused", "failing", "churning"})
    if (summary[state].get<int>() > 0)
      tally += ", " + std::to_string(summary[state].get<int>()) + " " + state;
  EXPECT_EQ(lines.back(), tally);
  // Each version the JSON lists is on the versions line, with as many nodes.
  const auto versionsLine = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.rfind("versions: ", 0) == 0;
  });
  ASSERT_NE(versionsLine, lines.end());
  for (const auto& ver : json["versions"])
    EXPECT_NE(
        versionsLine->find(std::to_string(ver["nodes"].size()) + " node(s) " +
                           (ver["digest"].is_null() ? std::string("with nothing applied")
                                                    : "on serial " + serialCell(ver["serial"]))),
        std::string::npos)
        << *versionsLine;
}

// A fleet without nodes: the text says so, the JSON has no node and a zero tally.
TEST(FleetView, TheTextAndTheJsonOfAnEmptyFleetAgree) {
  FleetView view;
  view.cluster = "prod";
  view.revision = 7;
  const auto json = nlohmann::json::parse(fleetJsonText(view));
  EXPECT_TRUE(json["nodes"].empty());
  EXPECT_EQ(json["summary"]["nodes"], 0);
  EXPECT_EQ(fleetTextLines(view),
            std::vector<std::string>{
                "cluster prod: no nodes (nothing under /mesh/prod/nodes/ at revision 7)"});
}

}  // namespace
}  // namespace mesh::fleet
