// The fleet's judgement (fleet/view.hh) on a range built here, large enough that the
// nodes are judged on several threads: each node keeps its own verdict and its place.
#include "fleet/view.hh"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sodium.h>

#include <algorithm>

#include "fleet/enroll.hh"
#include "fleet/node_signed.hh"
#include "trust/node_key.hh"
#include "trust/operator_key.hh"

namespace mesh::fleet {
namespace {

constexpr int64_t kNow = 1'800'000'000'000;
constexpr int64_t kLease = 0x1234;

struct Fleet {
  FleetKeys keys{"c"};
  trust::OperatorKey op = trust::OperatorKey::generate();
  EtcdRange range;
  int64_t revision = 1;

  void put(const std::string& key, const std::string& value, int64_t lease = 0) {
    range.kvs.push_back({key, value, ++revision, revision, lease});
  }
  // A node as an agent leaves it: enrolled, its status (and seen copy) and heartbeat
  // signed by its key on one lease. `signer` signs instead of its own key (forged);
  // `up` false: no lease-bound keys (down).
  void node(const std::string& name, bool up = true, const trust::NodeKey* signer = nullptr) {
    const auto key = trust::NodeKey::ephemeral();
    put(enrollmentKey(keys, name), encodeEnrollment("c", name, key.publicKey(), kNow, op));
    NodeStatus s;
    s.node = name;
    s.cluster = "c";
    s.cycle = 3;
    s.lease = kLease;
    s.publishedAtMs = kNow - 1000;
    const std::string status = signNodeJson(encodeStatus(s), signer ? *signer : key);
    put(keys.seen(name), status);
    if (!up) return;
    put(keys.status(name), status, kLease);
    put(heartbeatKey(keys, name),
        signNodeJson(encodeHeartbeat({name, "c", 1, kNow - 5000, kLease}), key), kLease);
  }
};

TEST(FleetView, ALargeFleetIsJudgedNodeByNodeInOrder) {
  ASSERT_GE(sodium_init(), 0);
  Fleet f;
  const auto stranger = trust::NodeKey::ephemeral();
  for (int i = 0; i < 300; ++i) {
    const auto name = fmt::format("n-{:03}", i);
    f.node(name, i % 50 != 7, i == 123 ? &stranger : nullptr);
  }
  std::sort(f.range.kvs.begin(), f.range.kvs.end(),
            [](const EtcdKeyValue& a, const EtcdKeyValue& b) { return a.key < b.key; });
  const auto view = viewFleet(f.range, f.keys, {f.op.publicKey()}, kNow);
  ASSERT_EQ(view.nodes.size(), 300u);
  for (int i = 0; i < 300; ++i) {
    const auto& n = view.nodes[static_cast<size_t>(i)];
    EXPECT_EQ(n.node, fmt::format("n-{:03}", i));
    const NodeState want = i == 123      ? NodeState::Forged
                           : i % 50 == 7 ? NodeState::Down
                                         : NodeState::Converged;
    EXPECT_EQ(n.state, want) << n.node << ": " << stateName(n.state);
    if (want == NodeState::Converged) {
      EXPECT_EQ(n.lastSeenMs(), kNow) << n.node;
    }
  }
  EXPECT_EQ(view.count(NodeState::Down), 6u);
  EXPECT_EQ(view.count(NodeState::Forged), 1u);
  EXPECT_EQ(view.count(NodeState::Converged), 293u);
}

// A reader that judges again and again (fleet serve) keeps what it verified: the same
// verdicts, and a value changed since, by one byte, is checked again and found forged.
TEST(FleetView, AMemoSparesCheckingAgainButNeverHidesAChange) {
  ASSERT_GE(sodium_init(), 0);
  Fleet f;
  for (int i = 0; i < 4; ++i) f.node(fmt::format("n-{}", i));
  std::sort(f.range.kvs.begin(), f.range.kvs.end(),
            [](const EtcdKeyValue& a, const EtcdKeyValue& b) { return a.key < b.key; });
  VerifiedMemo memo;
  for (int round = 0; round < 2; ++round) {
    const auto view = viewFleet(f.range, f.keys, {f.op.publicKey()}, kNow, &memo);
    EXPECT_EQ(view.count(NodeState::Converged), 4u) << "round " << round;
  }
  for (auto& kv : f.range.kvs) {
    if (kv.key == f.keys.status("n-1") || kv.key == f.keys.seen("n-1"))
      kv.value.replace(kv.value.find("\"cycle\":3"), 9, "\"cycle\":4");
    if (kv.key == enrollmentKey(f.keys, "n-2"))
      kv.value.replace(kv.value.find("\"enrolled_at_ms\":"), 17, "\"enrolled_at_ms\":1");
  }
  const auto view = viewFleet(f.range, f.keys, {f.op.publicKey()}, kNow, &memo);
  EXPECT_EQ(view.nodes[1].state, NodeState::Forged) << stateName(view.nodes[1].state);
  EXPECT_EQ(view.nodes[2].state, NodeState::Forged) << stateName(view.nodes[2].state);
  EXPECT_EQ(view.count(NodeState::Converged), 2u);
}

}  // namespace
}  // namespace mesh::fleet
