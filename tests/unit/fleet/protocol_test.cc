// The JSON nodes and operators exchange through etcd, and the key layout.
#include "fleet/protocol.hh"
#include "fleet/node_signed.hh"
#include "fleet/statement.hh"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "util/error.hh"

namespace mesh::fleet {
namespace {

TEST(FleetProtocol, PushedDeclarationAndStatementRoundTrip) {
  Statement st;
  st.cluster = "prod";
  st.selector.items = {"web-*", "db1"};
  st.declarationDigest = "sha256:00";
  st.serial = 3;
  st.maxParallelRestarts = 2;
  st.pushedAtMs = 1'700'000'000'000;
  st.pushedBy = "mesh-op:xyz";
  EXPECT_EQ(decodeStatement(encodeStatement(st), "k"), st);
  EXPECT_EQ(encodeStatement(st), encodeStatement(decodeStatement(encodeStatement(st), "k")));
  PushedDeclaration p{encodeStatement(st), "mesh-sig:abc:def\n",
                      "serial = 3\n# \"quoted\" and ünïcode\n"};
  const auto back = decodePushed(encodePushed(p), "k");
  EXPECT_EQ(back.statement, p.statement);
  EXPECT_EQ(back.signature, p.signature);
  EXPECT_EQ(back.text, p.text);
}

// The keys of chunks and push records sort as they should: chunks in order under their
// body's key, records by time (16 digits of unix ms).
TEST(FleetProtocol, ChunkAndPushRecordKeysSortInOrder) {
  const FleetKeys keys{"c"};
  const std::string digest = "sha256:" + std::string(64, 'a');
  EXPECT_EQ(keys.bodyChunk(digest, 0), keys.body(digest) + "/000000");
  EXPECT_LT(keys.bodyChunk(digest, 9), keys.bodyChunk(digest, 10));
  EXPECT_EQ(keys.push(1730000000000, digest), "/mesh/c/pushes/0001730000000000-aaaaaaaaaaaa");
  EXPECT_LT(keys.push(999, digest), keys.push(1000, digest));
  EXPECT_TRUE(keys.push(1, digest).starts_with(keys.pushesPrefix()));
}

TEST(FleetProtocol, ASelectorMatchesItsNamesAndGlobs) {
  Selector s;
  s.add("web-*,db1", "--nodes");
  s.add("cache[12]", "--nodes");
  for (const char* yes : {"web-1", "web-", "db1", "cache2"}) EXPECT_TRUE(s.matches(yes)) << yes;
  for (const char* no : {"web1", "db12", "db", "cache3", ""}) EXPECT_FALSE(s.matches(no)) << no;
  EXPECT_EQ(s.names(), std::vector<std::string>{"db1"});
  EXPECT_EQ(s.globs(), (std::vector<std::string>{"web-*", "cache[12]"}));
  EXPECT_THROW(s.add("a,,b", "--nodes"), InputError);
  EXPECT_THROW(s.add("a/b", "--nodes"), InputError);
}

TEST(FleetProtocol, AStatementMustSayItIsOne) {
  for (const char* bad : {"{}", R"({"type": "something else"})",
                          R"({"type": "mesh-host fleet statement v1"})", "serial = 3\n"})
    EXPECT_THROW(decodeStatement(bad, "k"), InputError) << bad;
}

TEST(FleetProtocol, NodeStatusRoundTripsWithAndWithoutARefusal) {
  NodeStatus s;
  s.node = "web-1";
  s.cluster = "prod";
  s.version = "0.1.0";
  s.pid = 42;
  s.publishedAtMs = 5;
  s.intervalMs = 300000;
  s.generation = 7;
  s.serial = 12;
  s.declarationDigest = "sha256:00";
  s.revision = 99;
  s.cycle = 31;
  s.lastCycleAtMs = 4;
  s.cycleMs = 9;
  s.trigger = "etcd revision 99";
  s.created = 1;
  s.updated = 2;
  s.unchanged = 3;
  s.removed = 4;
  s.failed = 1;
  s.failing = {{"m.x", "cannot write"}};
  s.churning = {"m.y"};
  s.cycleError = "";
  s.lease = 0x694d7a1b2c3d4e5f;
  EXPECT_EQ(decodeStatus(encodeStatus(s), "k"), s);
  s.refused = NodeStatus::Refusal{100, 13, "tampered", 6, "sha256:11", "sha256:22"};
  EXPECT_EQ(decodeStatus(encodeStatus(s), "k"), s);
  s.serial.reset();
  s.refused->serial.reset();
  EXPECT_EQ(decodeStatus(encodeStatus(s), "k"), s);
  s.paused = NodeStatus::Pause{"kernel upgrade", "root (sudo by ana)", 0, 1730000000000};
  s.noop = true;
  s.pending = 3;
  EXPECT_EQ(decodeStatus(encodeStatus(s), "k"), s);
  auto resumed = s;
  resumed.paused.reset();
  EXPECT_FALSE(sameMaterially(s, resumed)) << "a pause or a resume must be published";
  s.services = {{"process:web", "web.service", true, 1730000000900, 3, 1, "healthy", ""},
                {"service:nginx", "nginx.service", false, 0, 0, 4, "unhealthy", "exit 1: refused"}};
  EXPECT_EQ(decodeStatus(encodeStatus(s), "k"), s);
}

// decodeStatus reads a status in one pass, building no JSON tree; whatever that pass might
// read otherwise than the tree (a key given twice, a field of another type) is read by the
// tree, so every status decodes as it did: the last of a key given twice counts, a float
// where an integer is wanted is truncated, null is the field's default, unknown keys
// (nested or not) are skipped, and an empty key is just unknown.
TEST(FleetProtocol, AStatusDecodesAsTheJsonTreeReadsIt) {
  const auto d = [](const char* text) { return decodeStatus(text, "k"); };
  EXPECT_EQ(d(R"({"node":"a","serial":3,"serial":4})").serial, 4);
  EXPECT_EQ(d(R"({"node":"a","node":"b"})").node, "b");
  EXPECT_EQ(d(R"({"node":"a","summary":{"failed":1},"summary":{"created":2}})").failed, 0);
  EXPECT_EQ(d(R"({"node":"a","summary":{"failed":1},"summary":{"created":2}})").created, 2);
  EXPECT_EQ(d(R"({"node":"a","failing":[{"id":"x"}],"failing":[]})").failing.size(), 0u);
  EXPECT_EQ(d(R"({"node":"a","pid":7.9})").pid, 7);
  EXPECT_EQ(d(R"({"node":"a","pid":18446744073709551615})").pid, -1);
  EXPECT_EQ(d(R"({"node":"a","pid":null,"serial":null,"summary":null,"refused":null})").pid, 0);
  const auto skipped =
      d(R"({"x":{"node":"no","summary":{"failed":9}},"node":"a","y":[[{"node":"no"}],1,true],)"
        R"("summary":{"":5,"failed":2,"z":{"created":3}},"failing":[{"id":"i","":1,"reason":"r"}],)"
        R"("churning":["c1","c2"],"refused":{"serial":null,"reason":"bad","revision":3},)"
        R"("applied_cycle":{"cycle":4,"summary":{"updated":6},"q":null},"signature":"s"})");
  NodeStatus want;
  want.node = "a";
  want.failed = 2;
  want.failing = {{"i", "r"}};
  want.churning = {"c1", "c2"};
  want.refused.emplace();
  want.refused->revision = 3;
  want.refused->reason = "bad";
  want.appliedCycle.emplace();
  want.appliedCycle->cycle = 4;
  want.appliedCycle->updated = 6;
  EXPECT_EQ(skipped, want);
  EXPECT_FALSE(d(R"({"node":"a","applied_cycle":null})").appliedCycle);
  EXPECT_TRUE(d(R"({"node":"a","applied_cycle":{}})").appliedCycle);
  for (const char* bad :
       {R"({"node":"a","pid":"7"})", R"({"node":"a","serial":1.5})", R"({"node":"a","trigger":1})",
        R"({"node":"a","churning":[null]})", R"({"node":"a","failing":[{"id":1}]})",
        R"({"node":"a","summary":[]})", R"({"node":"a"} x)", R"({"node":"a","refused":[]})",
        R"({"node":7})", R"([{"node":"a"}])", R"("node")"})
    EXPECT_THROW(d(bad), InputError) << bad;
}

// Issue 13: an agent puts its status only when it changed materially; a cycle that found
// nothing to do changes only its number, its times and its trigger.
TEST(FleetProtocol, OnlyWhatChangesEveryCycleByItselfIsNotMaterial) {
  NodeStatus a;
  a.node = "web-1";
  a.serial = 3;
  a.declarationDigest = "sha256:00";
  a.cycle = 7;
  a.unchanged = 12;
  a.lease = 9;
  NodeStatus b = a;
  b.cycle = 8;
  b.lastCycleAtMs = 1000;
  b.cycleMs = 41;
  b.trigger = "interval";
  b.publishedAtMs = 2000;
  EXPECT_TRUE(sameMaterially(a, b));
  const std::vector<std::function<void(NodeStatus&)>> material = {
      [](NodeStatus& s) { s.serial = 4; },
      [](NodeStatus& s) { s.declarationDigest = "sha256:11"; },
      [](NodeStatus& s) { s.generation = 2; },
      [](NodeStatus& s) { s.revision = 5; },
      [](NodeStatus& s) { s.updated = 1; },
      [](NodeStatus& s) { s.failed = 1; },
      [](NodeStatus& s) {
        s.failing = {{"m.x", "cannot write"}};
      },
      [](NodeStatus& s) { s.churning = {"m.y"}; },
      [](NodeStatus& s) { s.cycleError = "no declaration"; },
      [](NodeStatus& s) { s.refused = NodeStatus::Refusal{1, 2, "tampered", 3, "sha256:1", ""}; },
      [](NodeStatus& s) { s.appliedCycle = NodeStatus::AppliedCycle{8, 1000, 0, 1, 11, 0, 0}; },
      [](NodeStatus& s) { s.version = "0.2.0"; },
      [](NodeStatus& s) { s.pid = 43; },
      [](NodeStatus& s) { s.etcdClusterId = "1484"; },
      [](NodeStatus& s) { s.lease = 10; },
      [](NodeStatus& s) {
        s.services = {{"process:web", "web.service", true, 5, 0, 0, "", ""}};
      },
  };
  for (size_t i = 0; i < material.size(); ++i) {
    NodeStatus c = b;
    material[i](c);
    EXPECT_FALSE(sameMaterially(a, c)) << "change " << i;
  }
}

TEST(FleetProtocol, MalformedValuesAreInputErrorsNamingTheKey) {
  for (const char* bad :
       {"", "not json", "[1,2]", "{}", R"({"declaration": 3})",
        R"({"declaration": "x", "serial": 3})", R"({"statement": "{}"})", R"({"signature": "s"})",
        R"({"statement": 3, "signature": "s", "declaration": "x"})"}) {
    try {
      decodePushed(bad, "/mesh/c/nodes/n/declaration");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("/mesh/c/nodes/n/declaration"), std::string::npos)
          << e.what();
    }
  }
  for (const char* bad : {"", "{}", R"({"node": ""})", R"({"node": "n", "summary": 3})",
                          R"({"node": "n", "churning": "x"})", R"({"node": "n", "failing": [1]})",
                          R"({"node": "n", "refused": 3})", R"({"node": "n", "services": [1]})",
                          R"({"node": "n", "services": [{"running": "yes"}]})"})
    EXPECT_THROW(decodeStatus(bad, "k"), InputError) << bad;
}

// A node's seen copy lives out of the nodes prefix; an older agent's under it still
// counts, and of the two the newer is the one.
TEST(FleetProtocol, NodesInTakesTheNewerOfTwoSeenCopies) {
  FleetKeys k{"prod"};
  EtcdRange range;
  range.kvs.push_back({k.legacySeen("a"), "old a", 5, 5, 0});
  range.kvs.push_back({k.status("b"), "b", 6, 6, 7});
  range.kvs.push_back({k.seen("a"), "new a", 9, 9, 0});
  range.kvs.push_back({k.seen("c"), "c", 3, 3, 0});
  range.kvs.push_back({k.seenPrefix() + "x/y", "not a node", 3, 3, 0});
  const auto nodes = nodesIn(range, k);
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes.at("a").seen->value, "new a");
  EXPECT_FALSE(nodes.at("b").seen);
  EXPECT_EQ(nodes.at("c").seen->value, "c");
  std::swap(range.kvs[0].modRevision, range.kvs[2].modRevision);
  EXPECT_EQ(nodesIn(range, k).at("a").seen->value, "old a");
}

// `fleet status` hands its range over (nodesIn of an rvalue): the values are moved, not
// copied, and every node gets exactly what the copying nodesIn gives it — either order of
// two seen copies included.
TEST(FleetProtocol, NodesInOfARangeHandedOverIsNodesInOfItsCopy) {
  FleetKeys k{"prod"};
  EtcdRange range;
  range.kvs.push_back({k.declaration("a"), "decl a", 2, 2, 0});
  range.kvs.push_back({k.legacySeen("a"), "old a", 5, 5, 0});
  range.kvs.push_back({k.status("a"), "status a", 7, 7, 9});
  range.kvs.push_back({enrollmentKey(k, "b"), "enrolled b", 3, 3, 0});
  range.kvs.push_back({heartbeatKey(k, "b"), "beat b", 8, 8, 9});
  range.kvs.push_back({k.nodesPrefix() + "b/other", "ignored", 4, 4, 0});
  range.kvs.push_back({k.seen("a"), "new a", 9, 9, 0});
  range.kvs.push_back({k.seen("c"), "c", 3, 3, 0});
  const auto same = [](const std::optional<EtcdKeyValue>& x, const std::optional<EtcdKeyValue>& y) {
    return x.has_value() == y.has_value() &&
           (!x || (x->key == y->key && x->value == y->value && x->modRevision == y->modRevision &&
                   x->lease == y->lease));
  };
  for (int order = 0; order < 2; ++order) {
    if (order == 1) std::swap(range.kvs[1].modRevision, range.kvs[6].modRevision);
    const auto copied = nodesIn(range, k);
    EtcdRange handed = range;
    const auto moved = nodesIn(std::move(handed), k);
    ASSERT_EQ(moved.size(), copied.size());
    for (const auto& [node, keys] : copied) {
      const auto& m = moved.at(node);
      EXPECT_TRUE(same(m.declaration, keys.declaration)) << node;
      EXPECT_TRUE(same(m.status, keys.status)) << node;
      EXPECT_TRUE(same(m.seen, keys.seen)) << node;
      EXPECT_TRUE(same(m.enrollment, keys.enrollment)) << node;
      EXPECT_TRUE(same(m.heartbeat, keys.heartbeat)) << node;
    }
    EXPECT_EQ(moved.at("a").seen->value, order == 0 ? "new a" : "old a");
  }
}

TEST(FleetProtocol, KeysAndTheirSplit) {
  FleetKeys k{"prod"};
  EXPECT_EQ(k.declaration("web-1"), "/mesh/prod/nodes/web-1/declaration");
  EXPECT_EQ(k.status("web-1"), "/mesh/prod/nodes/web-1/status");
  EXPECT_EQ(k.seen("web-1"), "/mesh/prod/seen/web-1");
  EXPECT_EQ(k.seenPrefix(), "/mesh/prod/seen/");
  EXPECT_EQ(k.legacySeen("web-1"), "/mesh/prod/nodes/web-1/seen");
  EXPECT_EQ(k.restartSlots("app.service"), "/mesh/prod/restarts/app.service/");
  EXPECT_EQ(k.splitNodeKey("/mesh/prod/nodes/web-1/status"),
            (std::pair<std::string, std::string>{"web-1", "status"}));
  EXPECT_FALSE(k.splitNodeKey("/mesh/other/nodes/web-1/status"));
  EXPECT_FALSE(k.splitNodeKey("/mesh/prod/nodes/web-1"));
  EXPECT_FALSE(k.splitNodeKey("/mesh/prod/nodes//status"));
  EXPECT_FALSE(k.splitNodeKey("/mesh/prod/nodes/a/b/c"));
}

TEST(FleetProtocol, NamesAreChecked) {
  for (const std::string& good :
       std::vector<std::string>{"a", "web-1", "db_2.prod", "x@y", std::string(128, 'n')})
    EXPECT_NO_THROW(checkFleetName(good, "--node")) << good;
  for (const std::string& bad :
       std::vector<std::string>{"", ".", "..", "a/b", "a b", "ü", std::string(129, 'n')})
    EXPECT_THROW(checkFleetName(bad, "--node"), InputError) << bad;
}

}  // namespace
}  // namespace mesh::fleet
