// `mesh-host fleet push --wait`: runs in the background while the test plays the node,
// putting its status once the push's put shows up in etcd.
#include <chrono>

#include "fleet/node_signed.hh"
#include "fleet/statement.hh"
#include "fleet_fixture.hh"
#include "util/digest.hh"

namespace mesh::fleet::test {
namespace {

using namespace std::chrono_literals;

class FleetWait : public FleetTest {
 protected:
  // The revision etcd is at now: a watch from it + 1 sees every later put.
  int64_t revisionNow() { return client->getPrefix(keys.nodesPrefix()).revision; }

  // Waits (through a watch, from `after` + 1) for the put of `node`'s declaration.
  int64_t awaitPush(const std::string& node, int64_t after) {
    int64_t revision = 0;
    const bool seen = client->watch(
        keys.declaration(node), after + 1,
        [&](const std::vector<EtcdEvent>& events) {
          revision = events.back().kv.modRevision;
          return false;
        },
        20s);
    EXPECT_TRUE(seen) << "no push to " << node;
    return revision;
  }

  Child pushInBackground(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"--key", keyFile};
    all.insert(all.end(), args.begin(), args.end());
    return start(fleetArgv("push", all));
  }
};

TEST_F(FleetWait, ReturnsZeroOnceTheNodeAppliedThePush) {
  publish(nodeStatus("web1", 0, std::nullopt), true);  // up, nothing applied yet
  const auto before = revisionNow();
  Child c = pushInBackground({"--node", "web1", "--wait", "30s", declare(declText(3))});
  const auto rev = awaitPush("web1", before);
  publish(nodeStatus("web1", rev - 1, std::nullopt), true);  // not there yet
  auto s = nodeStatus("web1", rev, 3);
  s.updated = 1;
  publish(s, true);
  Result r = finish(c);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("pushed web1: serial 3 (revision " + std::to_string(rev) + ")\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("applied web1: serial 3 (" + shortDigest(s.declarationDigest) +
                       ") in cycle 3: 0 created, 1 updated, 1 unchanged"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("1 of 1 node(s) applied serial 3"), std::string::npos) << r.out;
}

// A status that shows the pushed digest but is not signed by the node's enrolled key
// (an etcd writer forging "applied") never ends the wait: it times out, saying why.
TEST_F(FleetWait, AForgedStatusNeverCountsAsApplied) {
  publish(nodeStatus("web1", 0, std::nullopt), true);  // enrolled, up, nothing applied
  const auto before = revisionNow();
  Child c = pushInBackground({"--node", "web1", "--wait", "3s", declare(declText(3))});
  const auto rev = awaitPush("web1", before);
  auto s = nodeStatus("web1", rev, 3);
  ASSERT_EQ(s.declarationDigest, mesh::Digest::ofBytes(declText(3)).str());
  // Signed, but with another key than the one enrolled for web1.
  client->put(keys.status("web1"), signNodeJson(encodeStatus(s), nodeKey("intruder")), lease);
  Result r = finish(c);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("timed out web1: after 3s: its status does not verify (forged)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("0 of 1 node(s) applied"), std::string::npos) << r.out;
}

TEST_F(FleetWait, TimesOutWithOneNamingTheNode) {
  publish(nodeStatus("web2", 0, std::nullopt), false);  // down
  const auto start = std::chrono::steady_clock::now();
  Result r = push({"--nodes", "web2", "--wait", "1s", declare(declText(3))});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_NE(r.out.find("timed out web2: after 1s: down: no status on a live lease"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("0 of 1 node(s) applied"), std::string::npos) << r.out;
  Result j = push({"--nodes", "web2", "--wait", "200ms", "--json", declare(declText(3))});
  EXPECT_EQ(j.code, 1) << j.out << j.err;
  EXPECT_EQ(j.json().at("nodes").at(0).at("result"), "unchanged");
  EXPECT_EQ(j.json().at("nodes").at(0).at("outcome"), "timed_out");
}

TEST_F(FleetWait, ARefusalEndsTheWaitWithOne) {
  publish(nodeStatus("web1", 0, std::nullopt), true);
  const auto before = revisionNow();
  Child c = pushInBackground({"--node", "web1", "--wait", "30s", "--json", declare(declText(3))});
  const auto rev = awaitPush("web1", before);
  auto s = nodeStatus("web1", 0, std::nullopt);
  s.refused = NodeStatus::Refusal{rev,
                                  3,
                                  "not signed by a trusted key",
                                  1,
                                  valueDigest(client->get(keys.declaration("web1"))->value),
                                  ""};
  publish(s, true);
  Result r = finish(c);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const auto node = r.json().at("nodes").at(0);
  EXPECT_EQ(node.at("outcome"), "refused");
  EXPECT_NE(node.at("detail").get<std::string>().find("not signed by a trusted key"),
            std::string::npos);
  EXPECT_EQ(r.json().at("waited"), true);
}

TEST_F(FleetWait, AFailedResourceEndsTheWaitWithOne) {
  publish(nodeStatus("web1", 0, std::nullopt), true);
  const auto before = revisionNow();
  Child c = pushInBackground({"--node", "web1", "--wait", "30s", declare(declText(3))});
  const auto rev = awaitPush("web1", before);
  auto s = nodeStatus("web1", rev, 3);
  s.failed = 1;
  s.failing = {{"demo.config", "permission denied"}};
  publish(s, true);
  Result r = finish(c);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("failed web1: serial 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("demo.config: permission denied"), std::string::npos) << r.out;
}

TEST_F(FleetWait, AnUnchangedNodeThatAppliedItIsDoneAtOnce) {
  const auto decl = declare(declText(4));
  ASSERT_EQ(push({"--node", "web1", decl}).code, 0);
  publish(nodeStatus("web1", *declarationRevision("web1"), 4), true);
  Result r = push({"--node", "web1", "--wait", "30s", decl});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("unchanged web1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("applied web1"), std::string::npos) << r.out;
}

// --- Issue 12 (part A): --wait judges by content ---

// The status after a later cycle that had nothing to do still quotes the cycle that
// applied the push.
TEST_F(FleetWait, QuotesTheCycleThatAppliedThePushNotALaterOne) {
  const auto decl = declare(declText(4));
  ASSERT_EQ(push({"--node", "web1", decl}).code, 0);
  auto s = nodeStatus("web1", *declarationRevision("web1"), 4);
  s.cycle = 9;  // a later no-op cycle
  s.appliedCycle = NodeStatus::AppliedCycle{
      .cycle = 7, .atMs = 1, .created = 1, .updated = 2, .unchanged = 0, .removed = 0, .failed = 0};
  publish(s, true);
  Result r = push({"--node", "web1", "--wait", "30s", decl});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("in cycle 7: 1 created, 2 updated, 0 unchanged"), std::string::npos)
      << r.out;
}

// Issue 12.2: a node whose status names a revision far above the push (cached from an
// etcd since wiped) has not applied it: only the pushed digest and serial count.
TEST_F(FleetWait, AStatusWithAHigherRevisionButAnotherDigestIsNotApplied) {
  publish(nodeStatus("web1", 1'000'000, 4), true);
  Result r = push({"--node", "web1", "--wait", "300ms", declare(declText(5))});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("timed out web1: after 300ms: its status shows serial 4"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("0 of 1 node(s) applied serial 5"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace mesh::fleet::test
