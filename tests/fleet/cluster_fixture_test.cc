// tests/etcd/etcd.sh's cluster mode, as the cluster tests use it: three members that agree,
// a killed leader replaced, a paused member that answers nothing until resumed.
#include <gtest/gtest.h>

#include <chrono>

#include "fleet/etcd.hh"
#include "test_cluster.hh"

namespace mesh::fleet::test {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<mesh::test::TestCluster> startedCluster() {
  auto c = mesh::test::TestCluster::start();
  if (!c->skipReason.empty()) return nullptr;
  EXPECT_EQ(c->failure, "");
  return c;
}

TEST(ClusterFixture, ThreeMembersAgreeAKilledLeaderIsReplacedAndAPausedMemberAnswersNothing) {
  auto c = startedCluster();
  if (!c) GTEST_SKIP() << "no /usr/bin/etcd";
  ASSERT_EQ(c->member.size(), 3u);
  EtcdClient one(c->member[0]), three(c->member[2], 1s);
  one.put("/mesh/fixture", "a");
  ASSERT_TRUE(three.get("/mesh/fixture"));
  EXPECT_EQ(three.get("/mesh/fixture")->value, "a");

  const int was = c->leader();
  ASSERT_GE(was, 1);
  c->kill(was);
  const int now = c->leader();
  ASSERT_GE(now, 1);
  EXPECT_NE(now, was);
  EtcdClient survivor(c->member[static_cast<std::size_t>(now - 1)]);
  survivor.put("/mesh/fixture", "b");
  c->restart(was);
  EtcdClient back(c->member[static_cast<std::size_t>(was - 1)]);
  EXPECT_EQ(back.get("/mesh/fixture")->value, "b");

  const int paused = now == 3 ? 1 : 3;
  c->pause(paused);
  EtcdClient quiet(c->member[static_cast<std::size_t>(paused - 1)], 1s);
  EXPECT_THROW(quiet.get("/mesh/fixture"), Error);
  c->resume(paused);
  EXPECT_EQ(quiet.get("/mesh/fixture")->value, "b");
}

}  // namespace
}  // namespace mesh::fleet::test
