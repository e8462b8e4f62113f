// `fleet push` in batches (issue 13): statements put in etcd transactions of up to
// kEtcdMaxTxnOps nodes, several at once; a conflict found in a batch is named per node;
// declarations over etcd's request limit stored in chunks.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "fleet/batch_put.hh"
#include "fleet/bodies.hh"
#include "fleet/push.hh"
#include "fleet_fixture.hh"
#include "util/digest.hh"

namespace mesh::fleet::test {
namespace {

using FleetBatch = FleetTest;

std::vector<std::string> nodeNames(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(fmt::format("n{:03}", i));
  return out;
}

// 300 nodes: three transactions (128 + 128 + 44), each at a revision of its own, and
// every node holds the statement.
TEST_F(FleetBatch, MoreNodesThanOneTransactionTakesSpanBatchesAndReachEveryNode) {
  const auto names = nodeNames(300);
  Result r =
      push({"--nodes", fmt::format("{}", fmt::join(names, ",")), "--json", declare(declText(7))});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = r.json();
  ASSERT_EQ(j.at("nodes").size(), 300u);
  std::map<int64_t, int> perRevision;
  for (const auto& n : j.at("nodes")) {
    EXPECT_EQ(n.at("result"), "pushed") << n.dump();
    ++perRevision[n.at("revision").get<int64_t>()];
  }
  std::vector<int> sizes;
  for (const auto& [rev, count] : perRevision) sizes.push_back(count);
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, (std::vector<int>{44, 128, 128}));
  for (const auto& n : names) {
    const auto rev = declarationRevision(n);
    ASSERT_TRUE(rev) << n;
    EXPECT_EQ(statementOf(n)->serial, 7) << n;
  }
}

// Nodes that already hold the same serial and text keep their value and revision; the
// others in the same push are put.
TEST_F(FleetBatch, UnchangedNodesInABatchedPushKeepTheirValue) {
  const auto names = nodeNames(200);
  const std::vector<std::string> first(names.begin(), names.begin() + 150);
  const std::string text = declText(3);
  ASSERT_EQ(push({"--nodes", fmt::format("{}", fmt::join(first, ",")), declare(text)}).code, 0);
  std::map<std::string, int64_t> before;
  for (const auto& n : first) before[n] = *declarationRevision(n);

  Result r = push({"--nodes", "n*,n199", "--json", declare(text, "again.toml")});
  ASSERT_EQ(r.code, 0) << r.err;
  int unchanged = 0, pushed = 0;
  const auto j = r.json();
  for (const auto& n : j.at("nodes")) {
    const std::string node = n.at("node");
    if (before.count(node)) {
      EXPECT_EQ(n.at("result"), "unchanged") << node;
      EXPECT_EQ(*declarationRevision(node), before[node]) << node;
      ++unchanged;
    } else {
      EXPECT_EQ(n.at("result"), "pushed") << node;
      ++pushed;
    }
  }
  EXPECT_EQ(unchanged, 150);
  EXPECT_EQ(pushed, 1) << "n* matches only the 150 known nodes; n199 is named";
}

// A writer outside fleet push changes one node's key between push's checks and its
// puts, in the middle of the second batch: that batch's transaction fails, and its nodes
// are put one by one, so that exactly that node is a conflict, keeps the outsider's
// value, and every other node is pushed.
TEST_F(FleetBatch, AConflictInTheMiddleOfABatchIsFoundAndNamed) {
  const auto names = nodeNames(200);
  PushRequest request;
  request.cluster = cluster;
  request.selector.items = names;
  request.declarationPath = "decl.toml";
  request.text = declText(4);
  PushEvents events;
  std::vector<std::string> progressed;
  events.progress = [&](const PushedNode& n) { progressed.push_back(n.node); };
  events.beforePuts = [&] { client->put(keys.declaration("n150"), "written by someone else"); };
  const auto report = fleet::push(*client, trust::OperatorKey::load(keyFile), request, events);

  ASSERT_EQ(report.nodes.size(), 200u);
  for (const auto& n : report.nodes) {
    if (n.node == "n150") {
      EXPECT_EQ(n.result, PushedNode::Result::Conflict);
      EXPECT_NE(n.detail.find("changed after it was checked"), std::string::npos) << n.detail;
    } else {
      EXPECT_EQ(n.result, PushedNode::Result::Pushed) << n.node;
      EXPECT_EQ(statementOf(n.node)->serial, 4) << n.node;
    }
  }
  EXPECT_EQ(client->get(keys.declaration("n150"))->value, "written by someone else");
  std::sort(progressed.begin(), progressed.end());
  EXPECT_EQ(progressed, names) << "one progress event per node";
}

// The batching itself, with small limits: many batches on several streams, a stale
// expected revision in one of them, and a key expected absent that exists.
TEST_F(FleetBatch, PutAllIfUnchangedPutsEveryKeyButTheChangedOnes) {
  std::vector<ConditionalPut> puts;
  for (int i = 0; i < 40; ++i) {
    const std::string key = keys.nodesPrefix() + fmt::format("k{:02}", i);
    int64_t rev = 0;
    if (i % 2 == 0) rev = client->put(key, "old");
    puts.push_back({key, rev});
  }
  client->put(puts[13].key, "appeared");                            // expected absent
  puts[26].expectedModRevision = puts[26].expectedModRevision - 1;  // stale
  std::map<std::size_t, int64_t> done;
  int ticks = 0;
  putAllIfUnchanged(
      *client, puts, "new", BatchLimits{4, 1024, 3},
      [&](std::size_t i, int64_t revision) { EXPECT_TRUE(done.emplace(i, revision).second) << i; },
      [&] { ++ticks; });
  ASSERT_EQ(done.size(), puts.size());
  for (std::size_t i = 0; i < puts.size(); ++i) {
    const auto now = client->get(puts[i].key);
    if (i == 13 || i == 26) {
      EXPECT_EQ(done[i], 0) << i;
      EXPECT_NE(now->value, "new") << i;
    } else {
      EXPECT_GT(done[i], 0) << i;
      EXPECT_EQ(now->value, "new") << i;
      EXPECT_EQ(now->modRevision, done[i]) << i;
    }
  }
  EXPECT_GE(ticks, 1);
}

// A push reads only the declaration keys' values (scattered among every node's keys):
// in transactions of up to kEtcdMaxTxnOps keys on several streams, all at one revision,
// keys missing left out.
TEST_F(FleetBatch, ReadKeysAtReadsScatteredKeysAtOneRevision) {
  std::vector<std::string> wanted;
  for (int i = 0; i < 300; ++i) {
    const std::string key = keys.nodesPrefix() + fmt::format("k{:03}", i);
    if (i % 7 != 3) client->put(key, fmt::format("v{}", i));
    wanted.push_back(key);
  }
  const int64_t revision = client->put(keys.nodesPrefix() + "k000", "v0 again");
  client->put(keys.nodesPrefix() + "k001", "after");  // not at `revision`
  const auto read = readKeysAt(*client, wanted, revision, 3);
  std::map<std::string, std::string> got;
  for (const auto& kv : read) got[kv.key] = kv.value;
  EXPECT_EQ(got.size(), read.size()) << "a key read twice";
  EXPECT_TRUE(std::is_sorted(read.begin(), read.end(),
                             [](const auto& a, const auto& b) { return a.key < b.key; }));
  for (int i = 0; i < 300; ++i) {
    const auto it = got.find(wanted[static_cast<size_t>(i)]);
    if (i % 7 == 3) {
      EXPECT_EQ(it, got.end()) << i;
      continue;
    }
    ASSERT_NE(it, got.end()) << i;
    EXPECT_EQ(it->second, i == 0 ? "v0 again" : fmt::format("v{}", i)) << i;
  }
}

// Issue 13: a 2 MB declaration was refused by etcd with its raw "request is too large".
// It is stored in chunks under its digest, read back whole, and dropped, chunks and
// all, once no node names it.
TEST_F(FleetBatch, ADeclarationOverEtcdsRequestLimitIsStoredInChunks) {
  const std::string big = declText(5, std::string(2 * 1024 * 1024, 'x'));
  Result r = push({"--nodes", "web1,web2", declare(big)});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string digest = Digest::ofBytes(big).str();
  std::vector<std::string> stored;
  for (const auto& kv : client->keysUnder(keys.bodiesPrefix()).kvs) stored.push_back(kv.key);
  EXPECT_EQ(stored,
            (std::vector<std::string>{keys.body(digest), keys.bodyChunk(digest, 0),
                                      keys.bodyChunk(digest, 1), keys.bodyChunk(digest, 2)}));
  for (const char* node : {"web1", "web2"}) {
    const auto pushed = pushedTo(node);
    ASSERT_TRUE(pushed) << node;
    EXPECT_EQ(pushed->text.size(), big.size());
    EXPECT_EQ(verifyStatement(*pushed, node, {operatorKey}).declarationDigest, digest);
  }

  ASSERT_EQ(push({"--nodes", "web1,web2", declare(declText(6), "small.toml")}).code, 0);
  const auto left = client->keysUnder(keys.bodiesPrefix()).kvs;
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].key, keys.body(Digest::ofBytes(declText(6)).str()));
}

// What is still too large says so plainly: a declaration over kMaxBodyBytes is bad
// input naming the way out, and a request etcd refuses as too large says which limit.
TEST_F(FleetBatch, OverLargeRequestsGiveAClearError) {
  Result r = push(
      {"--node", "web1", declare(declText(1, std::string(kMaxBodyBytes + 1, 'y')), "huge.toml")});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("huge.toml is 64.0 MiB; fleet push stores at most 64 MiB"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("bundle"), std::string::npos) << r.err;
  EXPECT_FALSE(client->get(keys.declaration("web1")));

  try {
    client->put(keys.body("sha256:00"), std::string(2 * 1024 * 1024, 'z'));
    ADD_FAILURE() << "etcd took a 2 MiB put";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("over etcd's limit for one request (--max-request-bytes"),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find("etcdserver:"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace mesh::fleet::test
