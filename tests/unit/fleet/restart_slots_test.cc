// RestartSlots against a real etcd 3.4: one etcd per test process (tests/etcd/test_etcd.hh;
// skipped only when /usr/bin/etcd is missing).
#include "fleet/restart_slots.hh"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "test_etcd.hh"

namespace mesh::fleet {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Slot = RestartSlots::Slot;

// What a waiting acquire ended with, and when.
struct Acquired {
  std::optional<Slot> slot;
  std::string error;
  Clock::time_point at;
};

std::future<Acquired> acquireAsync(RestartSlots& slots, std::int64_t limit,
                                   std::chrono::milliseconds timeout,
                                   const std::atomic<bool>* stop = nullptr) {
  return std::async(std::launch::async, [&slots, limit, timeout, stop] {
    Acquired out;
    try {
      out.slot.emplace(slots.acquire("web", limit, timeout, stop));
    } catch (const Error& e) {
      out.error = e.what();
    }
    out.at = Clock::now();
    return out;
  });
}

class RestartSlotsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto& etcd = test::testEtcd();
    if (!etcd.skipReason.empty()) GTEST_SKIP() << etcd.skipReason;
    ASSERT_TRUE(etcd.failure.empty()) << etcd.failure;
    raw = newClient();
    // A cluster of the test's own, so tests never see each other's keys.
    keys.cluster = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    prefix = keys.restartSlots("web");
  }

  // One client per simulated node, as each node has its own connection.
  std::unique_ptr<EtcdClient> newClient() {
    return std::make_unique<EtcdClient>(test::testEtcd().url);
  }

  RestartSlots node(const std::string& name, std::chrono::seconds ttl = 10s) {
    clients.push_back(newClient());
    return RestartSlots(*clients.back(), keys, name, ttl);
  }

  static std::string valueOf(const std::string& name) {
    return name + " pid " + std::to_string(getpid());
  }

  // The number of leases etcd holds (the gateway's /v3/lease/leases, which EtcdClient lacks).
  static int leaseCount() {
    int status = 0;
    const auto out = test::shellOutput("curl -sS --noproxy '*' --max-time 5 -X POST -d '{}' " +
                                           test::testEtcd().url + "/v3/lease/leases 2>&1",
                                       &status);
    if (status != 0 || out.find("\"header\"") == std::string::npos) {
      ADD_FAILURE() << "cannot list leases: " << out;
      return -1;
    }
    int n = 0;
    for (auto at = out.find("\"ID\""); at != std::string::npos; at = out.find("\"ID\"", at + 1))
      ++n;
    return n;
  }

  std::unique_ptr<EtcdClient> raw;  // the test's own view of etcd
  std::vector<std::unique_ptr<EtcdClient>> clients;
  FleetKeys keys;
  std::string prefix;  // keys.restartSlots("web")
};

TEST_F(RestartSlotsTest, LimitOneMakesTheSecondHolderWaitForTheRelease) {
  auto a = node("node-a");
  auto b = node("node-b");
  std::future<Acquired> waiter;  // declared first: on failure, A's slot goes before it is awaited
  auto slotA = a.acquire("web", 1, 5s);
  EXPECT_EQ(slotA.key(), prefix + "0");
  EXPECT_EQ(raw->get(prefix + "0")->value, valueOf("node-a"));

  waiter = acquireAsync(b, 1, 20s);
  // B cannot be observed waiting, only not returning: give it time to fail to.
  ASSERT_EQ(waiter.wait_for(700ms), std::future_status::timeout)
      << "B acquired while A held the only slot";
  const auto releaseBegan = Clock::now();
  slotA.release();
  auto got = waiter.get();
  ASSERT_TRUE(got.slot) << got.error;
  EXPECT_TRUE(got.at > releaseBegan) << "B's acquire returned before A's release began";
  EXPECT_TRUE(got.slot->held());
  EXPECT_EQ(got.slot->key(), prefix + "0");
  auto range = raw->getPrefix(prefix);
  ASSERT_EQ(range.kvs.size(), 1u);
  EXPECT_EQ(range.kvs[0].value, valueOf("node-b"));
  EXPECT_EQ(range.kvs[0].lease, got.slot->lease());
}

TEST_F(RestartSlotsTest, LimitTwoAdmitsTwoHoldersAndTheThirdWaits) {
  auto a = node("node-a");
  auto b = node("node-b");
  auto c = node("node-c");
  std::future<Acquired> waiter;
  const auto start = Clock::now();
  auto slotA = a.acquire("web", 2, 5s);
  auto slotB = b.acquire("web", 2, 5s);
  EXPECT_LT(Clock::now() - start, 2s) << "two free slots should be taken without waiting";
  EXPECT_NE(slotA.key(), slotB.key());
  EXPECT_EQ(raw->getPrefix(prefix).kvs.size(), 2u);

  waiter = acquireAsync(c, 2, 20s);
  ASSERT_EQ(waiter.wait_for(700ms), std::future_status::timeout)
      << "C acquired while A and B held both slots";
  const auto freed = slotA.key();
  const auto releaseBegan = Clock::now();
  slotA.release();
  auto got = waiter.get();
  ASSERT_TRUE(got.slot) << got.error;
  EXPECT_TRUE(got.at > releaseBegan) << "C's acquire returned before A's release began";
  EXPECT_EQ(got.slot->key(), freed);
  EXPECT_TRUE(slotB.held());
  EXPECT_EQ(raw->getPrefix(prefix).kvs.size(), 2u);
}

TEST_F(RestartSlotsTest, ADeadHoldersSlotFreesWhenItsLeaseExpires) {
  // A holder that died: its slot on a 1 s lease that nobody renews.
  const auto lease = raw->grantLease(1);
  ASSERT_TRUE(raw->txnPutIfAbsent(prefix + "0", "dead-node pid 1", lease));
  auto b = node("node-b");
  const auto start = Clock::now();
  auto slot = b.acquire("web", 1, 10s);
  EXPECT_LT(Clock::now() - start, 5s) << "a 1 s lease took too long to free its slot";
  EXPECT_EQ(raw->keepAliveOnce(lease), 0) << "acquired while the dead holder's lease was alive";
  EXPECT_EQ(slot.key(), prefix + "0");
  EXPECT_EQ(raw->get(prefix + "0")->value, valueOf("node-b"));
}

TEST_F(RestartSlotsTest, TimeoutThrowsNamingTheServiceAndLeavesNoLease) {
  auto a = node("node-a");
  auto b = node("node-b");
  auto slotA = a.acquire("web", 1, 5s);
  const int leasesBefore = leaseCount();
  const auto start = Clock::now();
  try {
    const auto slotB = b.acquire("web", 1, 300ms);
    FAIL() << "acquired a slot that node-a holds";
  } catch (const Error& e) {
    const auto took = Clock::now() - start;
    const std::string msg = e.what();
    EXPECT_NE(msg.find("no restart slot for web within 300 ms: slot 0 held by node-a pid "),
              std::string::npos)
        << msg;
    EXPECT_GE(took, 300ms);
    EXPECT_LT(took, 3s);
  }
  EXPECT_EQ(leaseCount(), leasesBefore);
  EXPECT_TRUE(slotA.held());
}

TEST_F(RestartSlotsTest, StopFlagEndsTheWait) {
  auto a = node("node-a");
  auto b = node("node-b");
  std::atomic<bool> stop{false};
  std::future<Acquired> waiter;
  auto slotA = a.acquire("web", 1, 5s);
  waiter = acquireAsync(b, 1, 30s, &stop);
  ASSERT_EQ(waiter.wait_for(500ms), std::future_status::timeout) << "B did not wait";
  const auto stopSet = Clock::now();
  stop = true;
  auto got = waiter.get();
  EXPECT_FALSE(got.slot);
  // Regression: "no restart slot for web within 30 s: asked to stop after 4.3 s" said
  // both that it waited 30 s and that it stopped early.
  EXPECT_NE(got.error.find("stopped waiting for a restart slot for web after "), std::string::npos)
      << got.error;
  EXPECT_NE(got.error.find("(of up to 30 s): asked to stop"), std::string::npos) << got.error;
  EXPECT_EQ(got.error.find("within"), std::string::npos) << got.error;
  EXPECT_LT(got.at - stopSet, 1s) << "the wait went on for long after stop was set";
}

TEST_F(RestartSlotsTest, ReleaseRevokesTheLeaseAtOnce) {
  auto a = node("node-a");
  auto slot = a.acquire("web", 1, 5s);
  auto range = raw->getPrefix(prefix);
  ASSERT_EQ(range.kvs.size(), 1u);
  EXPECT_EQ(range.kvs[0].lease, slot.lease());

  auto moved = std::move(slot);
  EXPECT_FALSE(slot.held());  // NOLINT(bugprone-use-after-move): the moved-from state
  EXPECT_TRUE(moved.held());
  { auto emptied = std::move(slot); }  // NOLINT(bugprone-use-after-move): frees nothing
  EXPECT_EQ(raw->getPrefix(prefix).kvs.size(), 1u) << "a moved-from Slot released the slot";

  const auto lease = moved.lease();
  moved.release();
  EXPECT_TRUE(raw->getPrefix(prefix).kvs.empty());
  EXPECT_EQ(raw->keepAliveOnce(lease), 0);
  EXPECT_FALSE(moved.held());
  EXPECT_FALSE(moved.lost());
  EXPECT_NO_THROW(moved.release());  // a second release does nothing

  std::int64_t scopedLease = 0;
  {
    auto scoped = a.acquire("web", 1, 5s);
    scopedLease = scoped.lease();
    ASSERT_EQ(raw->getPrefix(prefix).kvs.size(), 1u);
  }
  EXPECT_TRUE(raw->getPrefix(prefix).kvs.empty()) << "the destructor did not free the slot";
  EXPECT_EQ(raw->keepAliveOnce(scopedLease), 0);
}

TEST_F(RestartSlotsTest, KeepAliveHoldsTheSlotPastItsTtl) {
  auto a = node("node-a", 1s);
  auto slot = a.acquire("web", 1, 5s);
  std::this_thread::sleep_for(2500ms);  // the point: time passing, 2.5 times the TTL
  auto range = raw->getPrefix(prefix);
  ASSERT_EQ(range.kvs.size(), 1u) << "the slot expired while held";
  EXPECT_EQ(range.kvs[0].lease, slot.lease());
  EXPECT_FALSE(slot.lost());
}

TEST_F(RestartSlotsTest, LostOnceTheLeaseIsRevokedBehindItsBack) {
  auto a = node("node-a", 1s);
  auto slot = a.acquire("web", 1, 5s);
  EXPECT_FALSE(slot.lost());
  ASSERT_TRUE(raw->revoke(slot.lease()));
  // Nothing to wait on: the keeper notices on its next renewal (every 333 ms).
  const auto until = Clock::now() + 5s;
  while (!slot.lost() && Clock::now() < until) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(slot.lost());
  EXPECT_NO_THROW(slot.release());
  EXPECT_TRUE(slot.lost());
}

TEST_F(RestartSlotsTest, SlotsAtOrAboveTheLimitAreNotConsidered) {
  // Left by a push with a limit of 4.
  const auto lease = raw->grantLease(30);
  ASSERT_TRUE(raw->txnPutIfAbsent(prefix + "3", "old-node pid 1", lease));
  ASSERT_TRUE(raw->txnPutIfAbsent(prefix + "1", "old-node pid 2", lease));
  auto a = node("node-a");
  auto b = node("node-b");
  auto slotA = a.acquire("web", 1, 2s);
  EXPECT_EQ(slotA.key(), prefix + "0");
  try {
    const auto slotB = b.acquire("web", 1, 300ms);
    FAIL() << "a second holder with a limit of 1";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("slot 0 held by node-a pid "), std::string::npos)
        << e.what();
  }
  raw->revoke(lease);
}

TEST_F(RestartSlotsTest, ContendedHoldersNeverExceedTheLimitNorLeakLeases) {
  constexpr int kNodes = 6, kRounds = 3, kLimit = 2;
  std::vector<RestartSlots> nodes;
  nodes.reserve(kNodes);
  for (int i = 0; i < kNodes; ++i) nodes.push_back(node("node-" + std::to_string(i)));
  const int leasesBefore = leaseCount();
  std::atomic<int> holding{0}, mostHolding{0}, acquired{0};
  std::vector<std::string> errors(kNodes);
  std::vector<std::thread> threads;
  threads.reserve(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    threads.emplace_back([&, i] {
      try {
        for (int r = 0; r < kRounds; ++r) {
          auto slot = nodes[i].acquire("web", kLimit, 30s);
          const int now = ++holding;
          int most = mostHolding;
          while (now > most && !mostHolding.compare_exchange_weak(most, now)) {
          }
          ++acquired;
          std::this_thread::sleep_for(30ms);  // the restart
          --holding;                          // before the release: others may then enter
          slot.release();
        }
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(acquired, kNodes * kRounds);
  EXPECT_LE(mostHolding, kLimit);
  EXPECT_GE(mostHolding, 1);
  EXPECT_TRUE(raw->getPrefix(prefix).kvs.empty());
  EXPECT_EQ(leaseCount(), leasesBefore) << "leases left behind";
}

TEST_F(RestartSlotsTest, BadArgumentsAreInputErrors) {
  auto a = node("node-a");
  EXPECT_THROW(a.acquire("web", 0, 1s), InputError);
  EXPECT_THROW(a.acquire("we/b", 1, 1s), InputError);
  EXPECT_THROW(a.acquire("", 1, 1s), InputError);
  EXPECT_THROW(RestartSlots(*raw, keys, "node-a", 0s), InputError);
  EXPECT_TRUE(raw->getPrefix("/mesh/" + keys.cluster + "/").kvs.empty());
}

// The granted TTL of a lease (the gateway's /v3/lease/timetolive, which EtcdClient lacks).
std::int64_t grantedTtl(std::int64_t lease) {
  int status = 0;
  const auto out = test::shellOutput("curl -sS --noproxy '*' --max-time 5 -X POST -d '{\"ID\": \"" +
                                         std::to_string(lease) + "\"}' " + test::testEtcd().url +
                                         "/v3/lease/timetolive 2>&1",
                                     &status);
  const auto at = out.find("\"grantedTTL\":\"");
  if (status != 0 || at == std::string::npos) {
    ADD_FAILURE() << "cannot read the lease's TTL: " << out;
    return -1;
  }
  return std::stoll(out.substr(at + 14));
}

// Regression: "--max-parallel-restarts 1 can be exceeded when the agent holding a slot dies
// mid-restart (the slot's 10 s lease expires while the service is still restarting)". A
// dead holder stops renewing; its slot now lasts the bound, not 10 s.
TEST_F(RestartSlotsTest, ASlotOutlastsADeadHolderUntilTheBound) {
  RestartSlots a(*raw, keys, "node-a");  // the agent's default
  auto slot = a.acquire("web", 1, 5s);
  EXPECT_EQ(grantedTtl(slot.lease()), kRestartSlotBound.count());
  EXPECT_GE(kRestartSlotBound, std::chrono::seconds(90));
}

// Regression: "an etcd writer holds a slot key without a lease: every restart stalls for
// three intervals".
TEST_F(RestartSlotsTest, ASlotKeyWithoutALeaseIsIgnored) {
  raw->put(prefix + "0", "writer pid 1");
  auto b = node("node-b");
  const auto start = Clock::now();
  auto slot = b.acquire("web", 1, 5s);
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_EQ(slot.key(), prefix + "0");
  const auto now = raw->getPrefix(prefix);
  ASSERT_EQ(now.kvs.size(), 1u);
  EXPECT_EQ(now.kvs[0].value, valueOf("node-b"));
  EXPECT_EQ(now.kvs[0].lease, slot.lease());
}

// A writer that renews a slot's lease forever delays a restart by the bound at most.
TEST_F(RestartSlotsTest, ASlotHeldPastTheBoundIsTakenOver) {
  const auto lease = raw->grantLease(60);
  ASSERT_TRUE(raw->txnPutIfAbsent(prefix + "0", "writer pid 1", lease));
  auto b = node("node-b", 2s);  // a bound of 2 s
  const auto start = Clock::now();
  auto slot = b.acquire("web", 1, 10s);
  const auto took = Clock::now() - start;
  EXPECT_GE(took, 2s) << "took a slot held for less than the bound";
  EXPECT_LT(took, 5s);
  EXPECT_EQ(slot.key(), prefix + "0");
  EXPECT_EQ(raw->get(prefix + "0")->value, valueOf("node-b"));
  raw->revoke(lease);
}

TEST_F(RestartSlotsTest, ANodeTakesOverTheSlotAnEarlierAgentOfItsOwnLeft) {
  const auto lease = raw->grantLease(60);
  ASSERT_TRUE(raw->txnPutIfAbsent(prefix + "0", "node-a pid 999999999", lease));
  auto a = node("node-a");
  const auto start = Clock::now();
  auto slot = a.acquire("web", 1, 5s);
  EXPECT_LT(Clock::now() - start, 2s) << "a node waited for itself";
  EXPECT_EQ(raw->get(prefix + "0")->value, valueOf("node-a"));
  // Another node still waits for it.
  auto b = node("node-b");
  EXPECT_THROW(b.acquire("web", 1, 300ms), Error);
  raw->revoke(lease);
}

TEST_F(RestartSlotsTest, ReleaseStaleFreesOnlyThisNodesSlotsOfEarlierAgents) {
  const auto lease = raw->grantLease(60);
  const std::string other = "/mesh/" + keys.cluster + "/restarts/db/0";
  ASSERT_TRUE(raw->txnPutIfAbsent(prefix + "1", "node-a pid 999999999", lease));
  ASSERT_TRUE(raw->txnPutIfAbsent(other, "node-a pid 999999998", lease));
  ASSERT_TRUE(raw->txnPutIfAbsent(prefix + "2", "node-b pid 1", lease));
  auto a = node("node-a");
  auto mine = a.acquire("web", 3, 5s);
  EXPECT_EQ(mine.key(), prefix + "0");
  auto released = a.releaseStale();
  std::sort(released.begin(), released.end());
  EXPECT_EQ(released, (std::vector<std::string>{other, prefix + "1"}));
  auto left = raw->getPrefix(prefix);
  ASSERT_EQ(left.kvs.size(), 2u);
  EXPECT_EQ(left.kvs[0].value, valueOf("node-a"));
  EXPECT_EQ(left.kvs[1].value, "node-b pid 1");
  EXPECT_FALSE(raw->get(other));
  raw->revoke(lease);
}

TEST(RestartSlotsUnreachable, ThrowsWithinTheTimeoutSayingSo) {
  EtcdClient etcd("http://127.0.0.1:1", 1s);
  RestartSlots slots(etcd, FleetKeys{"default"}, "node-a");
  const auto start = Clock::now();
  try {
    const auto slot = slots.acquire("web", 1, 1500ms);
    FAIL() << "acquired a slot from an etcd at port 1";
  } catch (const Error& e) {
    const auto took = Clock::now() - start;
    const std::string msg = e.what();
    EXPECT_NE(msg.find("no restart slot for web within 1.5 s: etcd at http://127.0.0.1:1 "
                       "unreachable: "),
              std::string::npos)
        << msg;
    EXPECT_GE(took, 1500ms) << "gave up before the timeout";
    EXPECT_LT(took, 3s);
  }
}

}  // namespace
}  // namespace mesh::fleet
