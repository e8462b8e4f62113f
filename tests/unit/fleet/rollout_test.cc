// The rollout's pure parts: the judge of one node (fleet/rollout_judge.hh), the waves, a
// previous declaration given a new serial, and the record's round trip.
#include <gtest/gtest.h>

#include <algorithm>

#include "fleet/rollout.hh"
#include "fleet/rollout_judge.hh"
#include "fleet/rollout_record.hh"
#include "fleet/view/json.hh"
#include "fleet/view/text.hh"
#include "trust/operator_key.hh"
#include "util/error.hh"
#include "util/text_safe.hh"

namespace mesh::fleet {
namespace {

using Kind = RolloutVerdict::Kind;

constexpr int64_t kAppliedAt = 1'000'000;
constexpr int64_t kMinHealthy = 10'000;

const RolloutTarget kTarget{12, "sha256:aa", "sha256:value"};

NodeStatus applied() {
  NodeStatus s;
  s.node = "web-1";
  s.cycle = 4;
  s.serial = 12;
  s.declarationDigest = "sha256:aa";
  s.lastCycleAtMs = kAppliedAt;
  s.appliedCycle = NodeStatus::AppliedCycle{4, kAppliedAt, 0, 1, 3, 0, 0, 0, 0};
  NodeStatus::Service web;
  web.id = "web.server";
  web.unit = "web.service";
  web.running = true;
  web.upSinceMs = kAppliedAt - 500;  // started by the cycle that applied it
  web.restartsByCrash = 2;           // before the push: not this rollout's doing
  s.services.push_back(web);
  return s;
}

TEST(RolloutJudge, ANodeStillOnTheOldSerialWaits) {
  NodeWatch w;
  auto s = applied();
  s.serial = 11;
  s.declarationDigest = "sha256:old";
  const auto v = judgeRolloutNode(s, kTarget, w, kAppliedAt, kMinHealthy);
  EXPECT_EQ(v.kind, Kind::Waiting);
  EXPECT_EQ(v.reason, "web-1 has not applied serial 12 yet");
}

TEST(RolloutJudge, AHealthyNodeIsHealthyOnlyOnceMinHealthyPassed) {
  NodeWatch w;
  const auto s = applied();
  auto v = judgeRolloutNode(s, kTarget, w, kAppliedAt + 100, kMinHealthy);
  EXPECT_EQ(v.kind, Kind::Waiting);
  EXPECT_EQ(v.healthyAtMs, kAppliedAt + 100 + kMinHealthy);
  v = judgeRolloutNode(s, kTarget, w, kAppliedAt + 100 + kMinHealthy - 1, kMinHealthy);
  EXPECT_EQ(v.kind, Kind::Waiting);
  EXPECT_EQ(v.reason, "web-1 healthy for 9999ms of 10s");
  v = judgeRolloutNode(s, kTarget, w, kAppliedAt + 100 + kMinHealthy, kMinHealthy);
  EXPECT_EQ(v.kind, Kind::Healthy);
}

TEST(RolloutJudge, ANodeWithNoServicesIsHealthyOnceApplied) {
  NodeWatch w;
  auto s = applied();
  s.services.clear();
  EXPECT_EQ(judgeRolloutNode(s, kTarget, w, kAppliedAt, 0).kind, Kind::Healthy);
}

TEST(RolloutJudge, ACrashRestartCountRisingWhileWatchedHalts) {
  NodeWatch w;
  auto s = applied();
  EXPECT_EQ(judgeRolloutNode(s, kTarget, w, kAppliedAt, kMinHealthy).kind, Kind::Waiting);
  s.services[0].restartsByCrash = 6;
  s.services[0].upSinceMs = kAppliedAt - 400;  // not after the apply: the count alone tells
  const auto v = judgeRolloutNode(s, kTarget, w, kAppliedAt + 10, kMinHealthy);
  EXPECT_EQ(v.kind, Kind::Halt);
  EXPECT_EQ(v.reason, "web-1 restarted web.service 4 time(s)");
}

TEST(RolloutJudge, ARunStartedAfterTheApplyHalts) {
  NodeWatch w;
  auto s = applied();
  s.services[0].upSinceMs = kAppliedAt + 3000;
  const auto v = judgeRolloutNode(s, kTarget, w, kAppliedAt + 4000, kMinHealthy);
  EXPECT_EQ(v.kind, Kind::Halt);
  EXPECT_EQ(v.reason,
            "web-1 web.service started again after serial 12 was applied (a crash or a start by "
            "hand)");
}

TEST(RolloutJudge, AnUnhealthyServiceHaltsAndAStartingOneWaits) {
  NodeWatch w;
  auto s = applied();
  s.services[0].health = "starting";
  auto v = judgeRolloutNode(s, kTarget, w, kAppliedAt + kMinHealthy * 5, kMinHealthy);
  EXPECT_EQ(v.kind, Kind::Waiting);
  EXPECT_EQ(v.reason, "web-1 web.service is still starting");
  s.services[0].health = "unhealthy";
  s.services[0].healthReason = "exit 1: connection refused";
  v = judgeRolloutNode(s, kTarget, w, kAppliedAt + kMinHealthy * 5, kMinHealthy);
  EXPECT_EQ(v.kind, Kind::Halt);
  EXPECT_EQ(v.reason, "web-1 web.service is unhealthy: exit 1: connection refused");
}

TEST(RolloutJudge, AServiceNotRunningWaitsAndStartsTheClockAgain) {
  NodeWatch w;
  auto s = applied();
  EXPECT_EQ(judgeRolloutNode(s, kTarget, w, kAppliedAt, kMinHealthy).kind, Kind::Waiting);
  s.services[0].running = false;
  s.services[0].upSinceMs = 0;
  auto v = judgeRolloutNode(s, kTarget, w, kAppliedAt + 5000, kMinHealthy);
  EXPECT_EQ(v.kind, Kind::Waiting);
  EXPECT_EQ(v.reason, "web-1 web.service is not running");
  EXPECT_FALSE(w.healthySinceMs);
}

TEST(RolloutJudge, FailingChurningACycleErrorAndARefusalHalt) {
  {
    NodeWatch w;
    auto s = applied();
    s.failed = 1;
    s.failing = {{"web.config", "permission denied"}};
    EXPECT_EQ(judgeRolloutNode(s, kTarget, w, kAppliedAt, 0).reason,
              "web-1 failed web.config: permission denied");
  }
  {
    NodeWatch w;
    auto s = applied();
    s.churning = {"web.server"};
    EXPECT_EQ(judgeRolloutNode(s, kTarget, w, kAppliedAt, 0).reason, "web-1 churns web.server");
  }
  {
    NodeWatch w;
    auto s = applied();
    s.cycleError = "state store locked";
    EXPECT_EQ(judgeRolloutNode(s, kTarget, w, kAppliedAt, 0).kind, Kind::Halt);
  }
  {
    NodeWatch w;
    auto s = applied();
    s.serial = 11;
    s.refused = NodeStatus::Refusal{7, 12, "bad signature", 1, "sha256:value", "sha256:aa"};
    const auto v = judgeRolloutNode(s, kTarget, w, kAppliedAt, 0);
    EXPECT_EQ(v.kind, Kind::Halt);
    EXPECT_EQ(v.reason, "web-1 refused serial 12: bad signature");
    s.refused->valueDigest = "sha256:an-older-value";  // not what this wave pushed
    EXPECT_EQ(judgeRolloutNode(s, kTarget, w, kAppliedAt, 0).kind, Kind::Waiting);
  }
}

TEST(RolloutWaves, ACanaryThenWavesOfACountOrAShare) {
  const std::vector<std::string> nodes{"a", "b", "c", "d", "e", "f", "g"};
  using Waves = std::vector<std::vector<std::string>>;
  EXPECT_EQ(planWaves(nodes, 1, "3"), (Waves{{"a"}, {"b", "c", "d"}, {"e", "f", "g"}}));
  EXPECT_EQ(planWaves(nodes, 2, "25%"), (Waves{{"a", "b"}, {"c", "d"}, {"e", "f"}, {"g"}}));
  EXPECT_EQ(planWaves(nodes, 1, "1%"), (Waves{{"a"}, {"b"}, {"c"}, {"d"}, {"e"}, {"f"}, {"g"}}));
  EXPECT_EQ(planWaves(nodes, 9, "1"), (Waves{nodes}));
  EXPECT_EQ(planWaves(nodes, 1, "100%"), (Waves{{"a"}, {"b", "c", "d", "e", "f", "g"}}));
}

TEST(RolloutWaves, ABadWaveOrCanaryIsBadInput) {
  for (const char* bad : {"", "0", "-1", "0%", "101%", "x", "3 ", "%", "2.5", "1e3"})
    EXPECT_THROW(checkWaveSpec(bad), InputError) << bad;
  EXPECT_THROW(planWaves({"a"}, 0, "1"), InputError);
  try {
    checkWaveSpec("0");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--wave '0'"), std::string::npos) << e.what();
  }
}

TEST(RolloutRevert, APreviousDeclarationGetsTheNewSerialAndNothingElseChanges) {
  const std::string text =
      "# web\nserial = 11  # the last one\n\n[module.web.file.config]\nserial = 3\n";
  EXPECT_EQ(withSerial(text, 13, "x"),
            "# web\nserial = 13  # the last one\n\n[module.web.file.config]\nserial = 3\n");
  EXPECT_THROW(withSerial("[module.web.file.config]\nserial = 3\n", 13, "x"), InputError);
}

TEST(RolloutRecordCodec, RoundTripsAndRefusesAnUnknownState) {
  RolloutRecord r;
  r.serial = 12;
  r.digest = "sha256:aa";
  r.declaration = "web.toml";
  r.pushedBy = "mesh-op:x";
  r.state = RolloutState::Halted;
  r.wave = 1;
  r.waves = {{"a"}, {"b", "c"}};
  r.reason = "b restarted web.service 4 time(s)";
  r.options.autoRevert = true;
  r.previous = {{"a", {"sha256:old", 11}}, {"b", {"", std::nullopt}}};
  r.revertSerial = 13;
  r.driver = "pid 1 on h";
  const auto key = trust::OperatorKey::generate();
  const auto value = encodeRolloutRecord(r, key);
  const auto text = nlohmann::json::parse(value).at("record").get<std::string>();
  EXPECT_EQ(decodeRolloutText(text, "k"), r);
  EXPECT_EQ(rolloutLine(r),
            "rollout of serial 12: wave 2 of 2, halted: b restarted web.service 4 time(s); "
            "reverted with serial 13");
  auto j = nlohmann::json::parse(text);
  j["state"] = "sleeping";
  EXPECT_THROW(decodeRolloutText(j.dump(), "k"), InputError);
  j["state"] = "running";
  j["wave"] = 2;  // not one of its two waves
  EXPECT_THROW(decodeRolloutText(j.dump(), "k"), InputError);
}

TEST(RolloutRecordCodec, FleetStatusShowsTheRolloutInItsJsonTreeTextAndLines) {
  FleetView v;
  v.cluster = "default";
  v.nodes.emplace_back();  // the text of a fleet without nodes is one line, no rollout
  v.nodes.back().node = "web-1";
  RolloutRecord r;
  r.serial = 12;
  r.state = RolloutState::Running;
  r.wave = 1;
  r.waves = {{"web-1"}, {"web-2", "web-3"}};
  v.rollout = r;
  EXPECT_EQ(fleetJsonText(v), jsonOut(fleetJson(v)));
  const auto j = fleetJson(v).at("rollout");
  EXPECT_EQ(j.at("state"), "running");
  EXPECT_EQ(j.at("wave"), 2);
  EXPECT_EQ(j.at("waves"), 2);
  EXPECT_EQ(j.at("canary"), std::vector<std::string>{"web-1"});
  const auto lines = fleetTextLines(v);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "rollout of serial 12: wave 2 of 2, running"),
            lines.end());
}

}  // namespace
}  // namespace mesh::fleet
