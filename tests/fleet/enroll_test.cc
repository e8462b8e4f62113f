// Enrolled node keys and signed statuses: `fleet enroll`, `fleet forget`, and what
// `fleet status` makes of a status, heartbeat or enrollment it cannot verify. Nodes are
// simulated by putting what a node's agent puts (the fixture signs it with the node's key).
#include <chrono>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "fleet/enroll.hh"
#include "fleet/node_signed.hh"
#include "fleet_fixture.hh"
#include "trust/signing.hh"

namespace mesh::fleet::test {
namespace {

using FleetEnroll = FleetTest;
namespace fs = std::filesystem;

int64_t unixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// node -> its row of `fleet status --json`.
std::map<std::string, nlohmann::json> rowsOf(const Result& r) {
  std::map<std::string, nlohmann::json> rows;
  const nlohmann::json nodes = r.json().at("nodes");
  for (const auto& row : nodes) rows[row.at("node").get<std::string>()] = row;
  return rows;
}

// Regression: "Node status keys can be forged to show converged".
TEST_F(FleetEnroll, AStatusNotSignedByTheEnrolledKeyIsForgedNotConverged) {
  const auto rev = putDeclaration("web1", 4);
  publish(nodeStatus("web1", rev, 4), true);
  Result before = status({"--json"});
  ASSERT_EQ(before.code, 0) << before.out << before.err;
  EXPECT_EQ(rowsOf(before).at("web1").at("state"), "converged");

  // Someone who can write to etcd puts a status of their own making.
  const auto forger = trust::NodeKey::ephemeral();
  auto fake = nodeStatus("web1", rev, 4);
  client->put(keys.status("web1"), signNodeJson(encodeStatus(fake), forger), lease);
  Result forged = status({"--json"});
  EXPECT_EQ(forged.code, 1) << forged.out;
  const auto row = rowsOf(forged).at("web1");
  EXPECT_EQ(row.at("state"), "forged") << row.dump();
  EXPECT_EQ(row.at("trust"), "forged");
  EXPECT_NE(row.at("trust_reason").get<std::string>().find("not signed by the node's enrolled key"),
            std::string::npos)
      << row.dump();
  EXPECT_EQ(row.at("applied_serial"), nullptr) << "a forged status's claims were shown";
  EXPECT_EQ(forged.json().at("summary").at("forged"), 1);

  // Unsigned, as before this change: forged too.
  client->put(keys.status("web1"), encodeStatus(fake), lease);
  Result text = status();
  EXPECT_EQ(text.code, 1);
  EXPECT_NE(text.out.find("web1: forged: " + keys.status("web1") + ": it is not signed"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("1 forged"), std::string::npos) << text.out;
}

TEST_F(FleetEnroll, AStatusCopiedFromAnotherNodeIsForged) {
  const auto rev = putDeclaration("web1", 4);
  publish(nodeStatus("web1", rev, 4), true);
  publish(nodeStatus("web2", putDeclaration("web2", 4), 4), true);
  // web2's genuine, signed status put at web1's key.
  client->put(keys.status("web1"), client->get(keys.status("web2"))->value, lease);
  Result r = status({"--json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(rowsOf(r).at("web1").at("state"), "forged");
  EXPECT_EQ(rowsOf(r).at("web2").at("state"), "converged");
}

TEST_F(FleetEnroll, ANodeThatPublishesWithoutAnEnrolledKeyIsUnenrolled) {
  const auto rev = putDeclaration("web9", 4);
  const auto key = trust::NodeKey::ephemeral();
  const auto text = signNodeJson(encodeStatus(nodeStatus("web9", rev, 4)), key);
  lease = client->grantLease(60);
  client->put(keys.status("web9"), text, lease);
  client->put(keys.seen("web9"), text);
  Result r = status();
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("unenrolled"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mesh-host fleet enroll web9 KEY"), std::string::npos) << r.out;

  // Enrolled with the node's key (as `key show` prints it), it is believed.
  Result e = runCommand(fleetArgv("enroll", {"--key", keyFile, "web9", key.publicKeyText()}));
  ASSERT_EQ(e.code, 0) << e.out << e.err;
  EXPECT_NE(e.out.find("enrolled web9: " + key.publicKeyText()), std::string::npos) << e.out;
  const Heartbeat h{"web9", cluster, 1, unixMs(), lease};
  client->put(heartbeatKey(keys, "web9"), signNodeJson(encodeHeartbeat(h), key), lease);
  Result after = status({"--json"});
  EXPECT_EQ(after.code, 0) << after.out;
  EXPECT_EQ(rowsOf(after).at("web9").at("state"), "converged");
}

TEST_F(FleetEnroll, AnEnrollmentSignedByAnUntrustedOperatorIsForged) {
  const auto rev = putDeclaration("web1", 4);
  lease = client->grantLease(60);
  // A writer enrolls a key of their own, signed by their own operator key.
  const auto writer = trust::OperatorKey::generate();
  const auto theirs = trust::NodeKey::ephemeral();
  client->put(enrollmentKey(keys, "web1"),
              encodeEnrollment(cluster, "web1", theirs.publicKey(), unixMs(), writer));
  client->put(keys.status("web1"), signNodeJson(encodeStatus(nodeStatus("web1", rev, 4)), theirs),
              lease);
  Result r = status({"--json"});
  EXPECT_EQ(r.code, 1);
  const auto row = rowsOf(r).at("web1");
  EXPECT_EQ(row.at("state"), "forged");
  EXPECT_NE(row.at("trust_reason").get<std::string>().find("not a trusted operator key"),
            std::string::npos)
      << row.dump();
  // Trusting that key too (the operator's choice) makes it believed: the check is the
  // enrollment's signer, nothing else.
  Result trusting = status({"--trust", writer.publicKey().text(), "--json"});
  EXPECT_EQ(rowsOf(trusting).at("web1").at("trust"), "verified") << trusting.out;
  // What that run verified is remembered (the test's $XDG_CACHE_HOME), but not the trust:
  // without the writer's key it is forged again.
  ASSERT_TRUE(fs::exists(work + "/cache/mesh-host/verified"));
  Result after = status({"--json"});
  EXPECT_EQ(after.code, 1);
  EXPECT_EQ(rowsOf(after).at("web1").at("state"), "forged") << after.out;
}

// `fleet status` remembers what it verified between runs: a status changed since, even by
// one byte and keeping its signature, is checked again.
TEST_F(FleetEnroll, AStatusChangedAfterARememberedCheckIsForged) {
  const auto rev = putDeclaration("web1", 4);
  publish(nodeStatus("web1", rev, 4), true);
  for (int i = 0; i < 2; ++i) {
    Result r = status({"--json"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
  }
  auto text = client->get(keys.status("web1"))->value;
  text.replace(text.find("\"serial\":4"), 10, "\"serial\":5");
  client->put(keys.status("web1"), text, lease);
  Result r = status({"--json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(rowsOf(r).at("web1").at("state"), "forged") << r.out;
}

TEST_F(FleetEnroll, EnrollRefusesWhatIsNotAFullNodeKeyAndStatusNeedsTrust) {
  const auto key = trust::NodeKey::ephemeral();
  const std::string text = key.publicKeyText();
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{"--key", keyFile, "web1", "mesh-node:AAAA"}, "not a node's public key"},
           {{"--key", keyFile, "web/1", text}, "NODE \"web/1\""},
           {{"--key", work + "/nope.key", "web1", text}, "nope.key"},
       }) {
    Result r = runCommand(fleetArgv("enroll", c.args));
    EXPECT_EQ(r.code, 2) << c.says << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("nothing was enrolled"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(client->getPrefix(keys.nodesPrefix()).kvs.empty());

  Result noTrust = runCommand(fleetArgv("status", {}));
  EXPECT_EQ(noTrust.code, 2) << noTrust.err;
  EXPECT_NE(noTrust.err.find("--trust"), std::string::npos) << noTrust.err;

  // Enrolling again with another key replaces the record, and says so.
  ASSERT_EQ(runCommand(fleetArgv("enroll", {"--key", keyFile, "web1", text})).code, 0);
  const auto other = trust::NodeKey::ephemeral().publicKeyText();
  Result again = runCommand(fleetArgv("enroll", {"--key", keyFile, "web1", other}));
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("it replaces " + text), std::string::npos) << again.out;
}

// Regression: "A typo in a node name creates a phantom node that stays down forever, with
// no way to remove it."
TEST_F(FleetEnroll, ForgetRemovesAPhantomNodeAndRefusesAnUnknownOrLiveOne) {
  publish(nodeStatus("web1", putDeclaration("web1", 4), 4), true);
  putDeclaration("web-1x", 4);  // the typo: pushed to, never started
  Result before = status();
  EXPECT_EQ(before.code, 1) << before.out;
  EXPECT_NE(before.out.find("web-1x"), std::string::npos);

  Result unknown = runCommand(fleetArgv("forget", {"web-1x", "nosuch"}));
  EXPECT_EQ(unknown.code, 2) << unknown.err;
  EXPECT_NE(unknown.err.find("node nosuch: no such node"), std::string::npos) << unknown.err;
  EXPECT_TRUE(declarationRevision("web-1x")) << "a refused forget removed something";

  Result live = runCommand(fleetArgv("forget", {"web1"}));
  EXPECT_EQ(live.code, 2) << live.err;
  EXPECT_NE(live.err.find("node web1 is up"), std::string::npos) << live.err;
  EXPECT_TRUE(client->get(keys.status("web1")));

  Result gone = runCommand(fleetArgv("forget", {"web-1x"}));
  EXPECT_EQ(gone.code, 0) << gone.err;
  EXPECT_NE(gone.out.find("forgot web-1x: 1 key(s) removed"), std::string::npos) << gone.out;
  EXPECT_TRUE(client->getPrefix(nodePrefix(keys, "web-1x")).kvs.empty());
  Result after = status();
  EXPECT_EQ(after.code, 0) << after.out;
  EXPECT_EQ(after.out.find("web-1x"), std::string::npos) << after.out;

  // --force: a node that is up, with all it has (enrollment, heartbeat, status, seen …).
  Result forced = runCommand(fleetArgv("forget", {"--force", "--json", "web1"}));
  EXPECT_EQ(forced.code, 0) << forced.err;
  EXPECT_EQ(forced.json().at("forgotten").at(0).at("keys"), 5) << forced.out;
  EXPECT_TRUE(client->getPrefix(nodePrefix(keys, "web1")).kvs.empty());
}

// Issue 13: liveness is the lease, not a heartbeat's age. A node that idles writes nothing
// for hours: while its status and heartbeat sit on the live lease they name, it is up.
TEST_F(FleetEnroll, ANodeIdleForHoursOnItsLiveLeaseIsUp) {
  const auto rev = putDeclaration("web1", 4);
  auto s = nodeStatus("web1", rev, 4);
  s.publishedAtMs = unixMs() - 3 * 3600'000;  // its last change: 3 hours ago
  publish(s, true);
  const Heartbeat h{"web1", cluster, 4242, unixMs() - 3 * 3600'000, lease};  // its lease's start
  client->put(heartbeatKey(keys, "web1"), signNodeJson(encodeHeartbeat(h), nodeKey("web1")), lease);
  Result r = status({"--json"});
  EXPECT_EQ(r.code, 0) << r.out;
  const auto row = rowsOf(r).at("web1");
  EXPECT_EQ(row.at("state"), "converged") << row.dump();
  EXPECT_GT(row.at("last_seen_ms").get<int64_t>(), unixMs() - 60'000) << "up: seen now";
}

// Issue 13 (at scale): a status that names the live lease it sits on says, signed, that
// its node is up; its heartbeat is then not read, so a heartbeat of someone else's making
// next to it changes nothing — while a status not signed by the node is forged as ever.
TEST_F(FleetEnroll, AStatusOnTheLeaseItNamesIsUpWhateverItsHeartbeat) {
  const auto rev = putDeclaration("web1", 4);
  publish(nodeStatus("web1", rev, 4), true);
  const auto forger = trust::NodeKey::ephemeral();
  const Heartbeat h{"web1", cluster, 4242, unixMs(), lease};
  client->put(heartbeatKey(keys, "web1"), signNodeJson(encodeHeartbeat(h), forger), lease);
  Result r = status({"--json"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(rowsOf(r).at("web1").at("state"), "converged") << r.out;
  client->del(heartbeatKey(keys, "web1"));
  Result without = status({"--json"});
  EXPECT_EQ(without.code, 0) << without.out;
  EXPECT_EQ(rowsOf(without).at("web1").at("state"), "converged") << without.out;

  auto fake = nodeStatus("web1", rev, 4);
  fake.lease = lease;
  client->put(keys.status("web1"), signNodeJson(encodeStatus(fake), forger), lease);
  Result forged = status({"--json"});
  EXPECT_EQ(forged.code, 1);
  EXPECT_EQ(rowsOf(forged).at("web1").at("state"), "forged") << forged.out;
}

// A dead node's genuine status and heartbeat, put back by an etcd writer on a lease of
// its own, do not make it look alive: both name the lease they were put on.
TEST_F(FleetEnroll, AStatusOrHeartbeatPutBackOnAnotherLeaseIsDown) {
  const auto rev = putDeclaration("web1", 4);
  publish(nodeStatus("web1", rev, 4), true);
  const auto statusText = client->get(keys.status("web1"))->value;
  const auto heartbeatText = client->get(heartbeatKey(keys, "web1"))->value;
  const auto other = client->grantLease(60);
  client->put(keys.status("web1"), statusText, other);
  Result r = status({"--json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(rowsOf(r).at("web1").at("state"), "down") << r.out;
  Result text = status();
  EXPECT_NE(text.out.find("web1: down: its status sits on lease"), std::string::npos) << text.out;

  // Both moved: the status names its old lease.
  client->put(heartbeatKey(keys, "web1"), heartbeatText, other);
  Result both = status();
  EXPECT_EQ(both.code, 1);
  EXPECT_NE(both.out.find("web1: down: its heartbeat names lease"), std::string::npos) << both.out;
  // Only the status put back on the live lease, from an earlier lease of the node.
  auto earlier = nodeStatus("web1", rev, 4);
  earlier.lease = other;
  client->put(heartbeatKey(keys, "web1"), heartbeatText, lease);
  client->put(keys.status("web1"), signNodeJson(encodeStatus(earlier), nodeKey("web1")), lease);
  Result replayed = status();
  EXPECT_EQ(replayed.code, 1);
  EXPECT_NE(replayed.out.find("web1: down: its status names lease"), std::string::npos)
      << replayed.out;
  client->revoke(other);
}

// A node running a mesh-host from before heartbeats lived on the lease puts a heartbeat
// naming none every few seconds: it counts while it is fresh.
TEST_F(FleetEnroll, AnOlderAgentsHeartbeatWithoutALeaseCountsWhileFresh) {
  const auto rev = putDeclaration("web1", 4);
  lease = client->grantLease(60);
  auto s = nodeStatus("web1", rev, 4);  // names no lease
  enroll("web1");
  client->put(keys.status("web1"), signNodeJson(encodeStatus(s), nodeKey("web1")), lease);
  const auto beatAt = [&](int64_t atMs) {
    const Heartbeat h{"web1", cluster, 4242, atMs};
    client->put(heartbeatKey(keys, "web1"), signNodeJson(encodeHeartbeat(h), nodeKey("web1")));
  };
  beatAt(unixMs());
  Result fresh = status({"--json"});
  EXPECT_EQ(fresh.code, 0) << fresh.out;
  EXPECT_EQ(rowsOf(fresh).at("web1").at("state"), "converged");
  const int64_t old = unixMs() - 60'000;
  beatAt(old);
  Result r = status({"--json"});
  EXPECT_EQ(r.code, 1);
  const auto row = rowsOf(r).at("web1");
  EXPECT_EQ(row.at("state"), "down") << row.dump();
  Result text = status();
  EXPECT_NE(text.out.find("web1: down: its status is on a live lease but its newest heartbeat"),
            std::string::npos)
      << text.out;
}

// Issue 27: whatever another etcd writer left at the enrollment key — a "key" that is
// not a string, JSON nested 300,000 deep — `fleet enroll` replaces it (it threw
// nlohmann's type_error: "internal error", nothing enrolled).
TEST_F(FleetEnroll, WhateverIsAtTheEnrollmentKeyIsReplaced) {
  const auto key = trust::NodeKey::ephemeral();
  for (const std::string& junk :
       {std::string(R"({"key":1})"),
        R"({"key":)" + std::string(300000, '[') + std::string(300000, ']') + "}"}) {
    client->put(enrollmentKey(keys, "web7"), junk);
    Result e = runCommand(fleetArgv("enroll", {"--key", keyFile, "web7", key.publicKeyText()}));
    EXPECT_EQ(e.code, 0) << e.out << e.err.substr(0, 300);
    EXPECT_NE(e.out.find("enrolled web7: " + key.publicKeyText()), std::string::npos) << e.out;
  }
}

}  // namespace
}  // namespace mesh::fleet::test
