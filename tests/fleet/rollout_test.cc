// `mesh-host fleet push --canary …` and `fleet rollout status|resume|abort` against a real
// etcd: the real binary drives the rollout in the background while the test plays the nodes,
// putting each one's signed status once the rollout's put to it shows up in etcd.
#include <fmt/format.h>
#include <signal.h>

#include <chrono>

#include "fleet/rollout.hh"
#include "fleet_fixture.hh"
#include "util/clock.hh"
#include "util/digest.hh"

namespace mesh::fleet::test {
namespace {

using namespace std::chrono_literals;

class FleetRollout : public FleetTest {
 protected:
  const std::vector<std::string> kNodes{"web-1", "web-2", "web-3"};

  // Every node up on serial 1, pushed as fleet push would and applied.
  void fleetOnSerialOne() {
    for (const auto& n : kNodes) {
      putDeclaration(n, 1);
      publish(applied(n, 1), true);
    }
  }

  int64_t revisionNow() { return client->getPrefix(keys.nodesPrefix()).revision; }

  // Waits (a watch from `after` + 1) for the put of `node`'s declaration; its revision.
  int64_t awaitPush(const std::string& node, int64_t after) {
    int64_t revision = 0;
    const bool seen = client->watch(
        keys.declaration(node), after + 1,
        [&](const std::vector<EtcdEvent>& events) {
          revision = events.back().kv.modRevision;
          return false;
        },
        30s);
    EXPECT_TRUE(seen) << "no push to " << node;
    return revision;
  }

  // The node's status once a cycle applied declText(serial): its service started by that
  // cycle, before it finished, and never restarted by a crash.
  NodeStatus applied(const std::string& node, int64_t serial) const {
    auto s = nodeStatus(node, 1, serial);
    const int64_t now = unixNowMs();
    s.lastCycleAtMs = now;
    s.appliedCycle = NodeStatus::AppliedCycle{3, now, 0, 1, 0, 0, 0, 0, 0};
    NodeStatus::Service web;
    web.id = "web.server";
    web.unit = "web.service";
    web.running = true;
    web.upSinceMs = now - 200;
    s.services = {web};
    return s;
  }

  Child rollout(std::vector<std::string> args) {
    std::vector<std::string> all = {"--key", keyFile};
    all.insert(all.end(), args.begin(), args.end());
    return start(fleetArgv("push", all));
  }

  Result rolloutCommand(std::vector<std::string> args) {
    return runCommand(fleetArgv("rollout", std::move(args)));
  }

  nlohmann::json rolloutJson() { return rolloutCommand({"status", "--json"}).json().at("rollout"); }
};

TEST_F(FleetRollout, AGoodPushWalksAllWaves) {
  fleetOnSerialOne();
  const auto decl = declare(declText(2));
  const int64_t from = revisionNow();
  Child driver =
      rollout({"--nodes", "web-*", "--canary", "1", "--wave", "2", "--min-healthy", "300ms", decl});

  const int64_t canary = awaitPush("web-1", from);
  // The canary alone: the others wait until it has stayed healthy.
  EXPECT_EQ(statementOf("web-2")->serial, 1);
  EXPECT_EQ(statementOf("web-3")->serial, 1);
  EXPECT_EQ(rolloutJson().at("state"), "running");
  publish(applied("web-1", 2), true);
  awaitPush("web-2", canary);
  publish(applied("web-2", 2), true);
  publish(applied("web-3", 2), true);

  const Result r = finish(driver);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const auto& n : kNodes) EXPECT_EQ(statementOf(n)->serial, 2) << n;
  EXPECT_NE(r.out.find("wave 1 of 2 (canary): pushed serial 2 to web-1\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("wave 2 of 2: pushed serial 2 to web-2, web-3\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("rollout of serial 2: wave 2 of 2, done\n"), std::string::npos) << r.out;

  const auto j = rolloutJson();
  EXPECT_EQ(j.at("state"), "done");
  EXPECT_EQ(j.at("wave"), 2);
  EXPECT_EQ(j.at("waves"), 2);
  EXPECT_EQ(j.at("canary"), (std::vector<std::string>{"web-1"}));
  // fleet status shows it too, in text and JSON.
  const Result st = status();
  EXPECT_NE(st.out.find("rollout of serial 2: wave 2 of 2, done\n"), std::string::npos) << st.out;
  EXPECT_EQ(status({"--json"}).json().at("rollout").at("state"), "done");
  // Each wave is a push in the history, saying where the rollout stood when it ended.
  const auto h = runCommand(fleetArgv("history", {"--json"})).json();
  ASSERT_EQ(h.at("pushes").size(), 2u);
  EXPECT_EQ(h.at("pushes")[0].at("rollout"), "rollout of serial 2: wave 2 of 2, done");
  EXPECT_EQ(h.at("pushes")[1].at("rollout"), "rollout of serial 2: wave 1 of 2 (canary), running");
}

TEST_F(FleetRollout, AServiceThatCrashesStopsItAtTheCanaryAndTheRestAreUntouched) {
  fleetOnSerialOne();
  const auto before2 = declarationRevision("web-2"), before3 = declarationRevision("web-3");
  const int64_t from = revisionNow();
  Child driver = rollout({"--nodes", "web-*", "--canary", "1", "--min-healthy", "30s",
                          "--healthy-deadline", "1m", declare(declText(2))});
  awaitPush("web-1", from);
  auto crashed = applied("web-1", 2);
  crashed.services[0].upSinceMs = crashed.appliedCycle->atMs + 50;  // Restart= started it again
  crashed.services[0].restartsByCrash = 1;
  publish(crashed, true);

  const Result r = finish(driver);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("halted in wave 1 of 3 (canary): web-1 web.service started again after "
                       "serial 2 was applied (a crash or a start by hand); not pushed to web-2, "
                       "web-3\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(declarationRevision("web-2"), before2);
  EXPECT_EQ(declarationRevision("web-3"), before3);
  EXPECT_EQ(statementOf("web-1")->serial, 2);  // no --auto-revert: the canary keeps it
  const auto j = rolloutJson();
  EXPECT_EQ(j.at("state"), "halted");
  EXPECT_EQ(j.at("wave"), 1);
  const Result st = status();
  EXPECT_NE(st.out.find("rollout of serial 2: wave 1 of 3 (canary), halted: web-1 web.service "
                        "started again"),
            std::string::npos)
      << st.out;
}

TEST_F(FleetRollout, AnUnhealthyServiceWithAutoRevertRestoresTheCanaryWithANewSerial) {
  fleetOnSerialOne();
  const auto before2 = declarationRevision("web-2");
  const int64_t from = revisionNow();
  Child driver = rollout({"--nodes", "web-*", "--canary", "1", "--auto-revert", "--min-healthy",
                          "30s", "--healthy-deadline", "1m", declare(declText(2))});
  const int64_t pushed = awaitPush("web-1", from);
  auto sick = applied("web-1", 2);
  sick.services[0].health = "unhealthy";
  sick.services[0].healthReason = "exit 1: connection refused";
  publish(sick, true);
  awaitPush("web-1", pushed);  // the revert

  const Result r = finish(driver);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("web-1 web.service is unhealthy: exit 1: connection refused"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("reverted web-1 to its previous declaration with serial 3\n"),
            std::string::npos)
      << r.out;
  const auto back = pushedTo("web-1");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->text, withSerial(declText(1), 3, "x"));
  EXPECT_EQ(statementOf("web-1")->serial, 3);
  EXPECT_EQ(declarationRevision("web-2"), before2);
  const auto j = rolloutJson();
  EXPECT_EQ(j.at("state"), "reverted");
  EXPECT_EQ(j.at("revert_serial"), 3);
  const auto h = runCommand(fleetArgv("history", {"--json"})).json();
  ASSERT_EQ(h.at("pushes").size(), 2u);
  EXPECT_EQ(h.at("pushes")[0].at("revert_of"), 2);
  EXPECT_EQ(h.at("pushes")[0].at("serial"), 3);
}

TEST_F(FleetRollout, ADeadlineMissedHalts) {
  fleetOnSerialOne();
  const auto before2 = declarationRevision("web-2");
  Child driver = rollout({"--nodes", "web-*", "--canary", "1", "--min-healthy", "100ms",
                          "--healthy-deadline", "1s", declare(declText(2))});
  const Result r = finish(driver);  // web-1 never applies it
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("halted in wave 1 of 3 (canary): web-1 missed the healthy deadline of 1s: "
                       "web-1 has not applied serial 2 yet"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(declarationRevision("web-2"), before2);
  EXPECT_EQ(rolloutJson().at("state"), "halted");
}

TEST_F(FleetRollout, AKilledDriverIsResumedAndFinishes) {
  fleetOnSerialOne();
  const int64_t from = revisionNow();
  Child driver = rollout(
      {"--nodes", "web-*", "--canary", "1", "--min-healthy", "200ms", declare(declText(2))});
  const int64_t canary = awaitPush("web-1", from);
  publish(applied("web-1", 2), true);
  const int64_t second = awaitPush("web-2", canary);
  ASSERT_EQ(::kill(driver.pid, SIGKILL), 0);
  finish(driver);
  EXPECT_EQ(rolloutJson().at("state"), "running");  // its driver is gone; the record stays

  Child resumed = start(fleetArgv("rollout", {"resume", "--key", keyFile}));
  publish(applied("web-2", 2), true);
  awaitPush("web-3", second);
  publish(applied("web-3", 2), true);
  const Result r = finish(resumed);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("resuming in wave 2 of 3\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rollout of serial 2: wave 3 of 3, done\n"), std::string::npos) << r.out;
  for (const auto& n : kNodes) EXPECT_EQ(statementOf(n)->serial, 2) << n;
}

TEST_F(FleetRollout, APlainPushOrASecondRolloutIsRefusedWhileOneRunsAndAbortStopsIt) {
  fleetOnSerialOne();
  const auto before3 = declarationRevision("web-3");
  const int64_t from = revisionNow();
  Child driver = rollout({"--nodes", "web-*", "--canary", "1", "--min-healthy", "100ms",
                          "--healthy-deadline", "2m", declare(declText(2))});
  awaitPush("web-1", from);

  const Result plain = push({"--node", "web-3", declare(declText(5), "other.toml")});
  EXPECT_EQ(plain.code, 1) << plain.out;
  EXPECT_NE(
      plain.err.find(
          "a rollout is running (rollout of serial 2: wave 1 of 3 (canary), running; driven by"),
      std::string::npos)
      << plain.err;
  const Result second =
      push({"--nodes", "web-*", "--canary", "1", declare(declText(5), "other.toml")});
  EXPECT_EQ(second.code, 1) << second.out;
  EXPECT_NE(second.err.find("one rollout at a time"), std::string::npos) << second.err;
  EXPECT_EQ(declarationRevision("web-3"), before3);

  const Result abort = rolloutCommand({"abort", "--key", keyFile});
  EXPECT_EQ(abort.code, 0) << abort.err;
  const Result r = finish(driver);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("the rollout was stopped from elsewhere"), std::string::npos) << r.out;
  EXPECT_EQ(declarationRevision("web-3"), before3);
  EXPECT_EQ(statementOf("web-2")->serial, 1);
  EXPECT_EQ(rolloutJson().at("state"), "aborted");
  // Once it is aborted, a plain push goes.
  EXPECT_EQ(push({"--node", "web-3", declare(declText(5), "other.toml")}).code, 0);
}

TEST_F(FleetRollout, EachBadOptionValueIsBadInputWithAClearError) {
  publish(applied("web-1", 1), true);
  const auto decl = declare(declText(2));
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--canary", "1", "--wave", "0"}, "--wave '0'"},
      {{"--canary", "1", "--wave", "101%"}, "--wave '101%'"},
      {{"--canary", "1", "--wave", "x"}, "--wave 'x'"},
      {{"--canary", "-1"}, "--canary -1"},
      {{"--canary", "1", "--min-healthy", "soon"}, "--min-healthy"},
      {{"--canary", "1", "--healthy-deadline", "1s", "--min-healthy", "5s"},
       "--healthy-deadline 1s is not more than --min-healthy 5s"},
      {{"--wave", "3"}, "give --canary N"},
      {{"--canary", "1", "--wait", "5s"}, "--wait does not go with --canary"},
  };
  for (const auto& [args, says] : cases) {
    std::vector<std::string> all = {"--node", "web-1"};
    all.insert(all.end(), args.begin(), args.end());
    all.push_back(decl);
    const Result r = push(all);
    EXPECT_EQ(r.code, 2) << fmt::format("{}", fmt::join(args, " "));
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
  EXPECT_FALSE(client->get(rolloutKey(keys)));  // nothing started
  const Result nothing = rolloutCommand({"resume", "--key", keyFile});
  EXPECT_EQ(nothing.code, 2);
  EXPECT_NE(nothing.err.find("nothing to resume"), std::string::npos) << nothing.err;
  EXPECT_EQ(rolloutCommand({"pause"}).code, 2);
}

}  // namespace
}  // namespace mesh::fleet::test
