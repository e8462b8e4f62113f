// The etcd client on a real three-member cluster (tests/etcd/test_cluster.hh): it uses one
// member, moves off one that is killed, paused (hung) or without a leader, says which
// member and what was seen, and spreads clients over the members by name.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "drop_proxy.hh"
#include "fleet/etcd.hh"
#include "fleet/etcd/members.hh"
#include "test_cluster.hh"

namespace mesh::fleet::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class EtcdCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster = mesh::test::TestCluster::start();
    if (!cluster->skipReason.empty()) GTEST_SKIP() << cluster->skipReason;
    ASSERT_EQ(cluster->failure, "");
  }
  // A client of the whole cluster whose first member is `first` (1..3).
  std::unique_ptr<EtcdClient> clientOn(int first, std::chrono::milliseconds timeout = 5s) {
    EtcdConfig c;
    c.endpoint = cluster->urls;
    c.members = std::make_shared<etcd::Members>(etcd::Members::parse(cluster->urls),
                                                static_cast<std::size_t>(first - 1));
    auto client = std::make_unique<EtcdClient>(c, timeout);
    EXPECT_EQ(client->member(), cluster->member[static_cast<std::size_t>(first - 1)]);
    return client;
  }
  std::unique_ptr<mesh::test::TestCluster> cluster;
};

TEST_F(EtcdCluster, AClientMovesOffAKilledMemberAndItsCallsGoOn) {
  auto client = clientOn(2);
  client->put("/mesh/k", "1");
  cluster->kill(2);
  client->put("/mesh/k", "2");  // sent again on a member that has (or gets) a leader
  EXPECT_NE(client->member(), cluster->member[1]);
  EXPECT_EQ(client->get("/mesh/k")->value, "2");
}

TEST_F(EtcdCluster, APausedMemberCountsAsHungWithinTheAnswerBudgetAndTheClientMoves) {
  auto client = clientOn(1);
  client->put("/mesh/k", "1");
  cluster->pause(1);
  const auto start = Clock::now();
  EXPECT_EQ(client->get("/mesh/k")->value, "1");
  const auto took = Clock::now() - start;
  EXPECT_GE(took, kAnswerBudget - 100ms);
  EXPECT_LT(took, kAnswerBudget + 1500ms);
  EXPECT_EQ(client->member(), cluster->member[1]);
  cluster->resume(1);
}

TEST_F(EtcdCluster, WithQuorumLostTheErrorSaysHowManyMembersAnswerAndNoneHasALeader) {
  auto client = clientOn(1, 3s);
  client->put("/mesh/k", "1");
  cluster->kill(2);
  cluster->kill(3);
  // Member 1 first holds reads it cannot confirm (hung, to the client) until it steps down
  // for want of a quorum (etcd's check-quorum, within an election timeout); from then on it
  // answers "no leader" at once.
  std::string msg;
  for (const auto deadline = Clock::now() + 15s;
       Clock::now() < deadline && msg.find("has no leader") == std::string::npos;) {
    try {
      client->get("/mesh/k");
      FAIL() << "read without a quorum";
    } catch (const Error& e) {
      msg = e.what();
    }
  }
  {
    EXPECT_NE(msg.find("etcd quorum lost: 1 of 3 members answer and none has a leader"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("etcd at " + cluster->member[0] + " has no leader"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("etcd at " + cluster->member[1] + " unreachable"), std::string::npos) << msg;
  }
  // Back to a majority: the same client is served again.
  cluster->restart(2);
  EXPECT_EQ(client->get("/mesh/k")->value, "1");
}

// etcd ends a leader-required watch when its member loses its leader, and refuses a new
// one there with 503 "etcdserver: no leader" (the gateway's words with the hasleader
// metadata); without it the watch stayed open and silent.
TEST_F(EtcdCluster, AWatchOnAMemberThatLosesItsLeaderEndsAndANewOneIsRefused) {
  EtcdConfig c;
  c.endpoint = cluster->member[0];  // this member alone: nowhere to move to
  EtcdClient client(c);
  client.put("/mesh/w", "1");
  cluster->kill(2);
  cluster->kill(3);
  const auto start = Clock::now();
  try {
    client.watch(
        "/mesh/w", 0, [](const auto&) { return true; }, 20s);
    FAIL() << "the watch outlived its member's leader";
  } catch (const EtcdMemberFailed& e) {
    EXPECT_LT(Clock::now() - start, 10s);
    EXPECT_EQ(e.member(), cluster->member[0]);
    const std::string msg = e.what();
    EXPECT_TRUE(msg.find("leader") != std::string::npos) << msg;
  }
  try {
    client.watch(
        "/mesh/w", 0, [](const auto&) { return true; }, 5s);
    FAIL() << "a watch was created on a member without a leader";
  } catch (const EtcdMemberFailed& e) {
    EXPECT_EQ(e.kind(), EtcdMemberFailed::Kind::NoLeader) << e.what();
    EXPECT_NE(std::string(e.what()).find("etcd at " + cluster->member[0] +
                                         " has no leader (etcdserver: no leader"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(EtcdCluster, AWatchFollowsWhenAnotherCallOfItsConfigurationLeavesAHungMember) {
  auto client = clientOn(1);
  const auto rev = client->put("/mesh/f", "1");
  EtcdClient watcher(client->config());  // shares the members
  std::mutex m;
  std::condition_variable cv;
  bool created = false;
  std::string ended;
  std::thread watching([&] {
    try {
      watcher.watch(
          "/mesh/f", rev + 1,
          [&](const auto&) {
            std::lock_guard<std::mutex> lock(m);
            created = true;
            cv.notify_all();
            return true;
          },
          30s);
      ended = "the watch stayed on the paused member";
    } catch (const EtcdMemberFailed& e) {
      ended = e.what();
    }
  });
  client->put("/mesh/f", "2");  // the watch's first event: it is established on member 1
  {
    std::unique_lock<std::mutex> lock(m);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return created; }));
  }
  cluster->pause(1);
  EXPECT_EQ(client->get("/mesh/f")->value, "2");  // finds member 1 hung, reads on member 2
  watching.join();
  EXPECT_NE(ended.find("etcd at " + cluster->member[0] + " left for " + cluster->member[1]),
            std::string::npos)
      << ended;
  cluster->resume(1);
}

// A transaction its member committed and whose answer was lost (the member's connection
// closed after it answered: DropProxy) is judged on another member by its keys: applied,
// with the revision of its put, put once.
TEST_F(EtcdCluster, ATransactionWhoseAnswerWasLostAfterItAppliedIsJudgedAppliedOnAnotherMember) {
  DropProxy proxy(cluster->member[0]);
  EtcdConfig c;
  c.endpoint = proxy.url + "," + cluster->member[1] + "," + cluster->member[2];
  c.members = std::make_shared<etcd::Members>(etcd::Members::parse(c.endpoint), 0);
  EtcdClient client(c, 5s);
  const auto r = client.txn({{"/mesh/judged", 0}}, {EtcdOp::put("/mesh/judged", "ours")});
  EXPECT_EQ(proxy.dropped.load(), 1) << "the member did not answer through the proxy";
  EXPECT_TRUE(r.succeeded);
  EXPECT_EQ(client.member(), cluster->member[1]);
  const auto range = client.getPrefix("/mesh/judged");
  ASSERT_EQ(range.kvs.size(), 1u);
  EXPECT_EQ(range.kvs[0].value, "ours");
  EXPECT_EQ(r.revision, range.kvs[0].modRevision);
  EXPECT_EQ(range.kvs[0].createRevision, range.kvs[0].modRevision) << "put more than once";

  // And one whose compare failed on the member (nothing applied, the answer lost) is
  // judged failed: the key holds another's value.
  client.put("/mesh/other", "theirs");
  EtcdConfig again = c;
  again.members = std::make_shared<etcd::Members>(etcd::Members::parse(c.endpoint), 0);
  EtcdClient second(again, 5s);
  const auto refused = second.txn({{"/mesh/other", 0}}, {EtcdOp::put("/mesh/other", "ours")});
  EXPECT_EQ(proxy.dropped.load(), 2);
  EXPECT_FALSE(refused.succeeded);
  EXPECT_EQ(second.get("/mesh/other")->value, "theirs");
}

TEST(EtcdMembers, NodesSpreadOverTheMembersByName) {
  std::set<std::size_t> used;
  for (int i = 1; i <= 9; ++i) used.insert(etcd::Members::firstFor("node-" + std::to_string(i), 3));
  EXPECT_EQ(used.size(), 3u);
  EXPECT_EQ(etcd::Members::firstFor("node-1", 3), etcd::Members::firstFor("node-1", 3));
  EXPECT_EQ(etcd::Members::firstFor("", 3), 0u);
}

TEST(EtcdMembers, AListIsParsedAndBadOnesAreBadInput) {
  EXPECT_EQ(etcd::Members::parse("http://a:1/, http://b:2,http://a:1"),
            (std::vector<std::string>{"http://a:1", "http://b:2"}));
  EXPECT_THROW(etcd::Members::parse("http://a:1,,http://b:2"), InputError);
  EXPECT_THROW(etcd::Members::parse("a:1"), InputError);
  EXPECT_THROW(etcd::Members::parse(""), InputError);
}

}  // namespace
}  // namespace mesh::fleet::test
