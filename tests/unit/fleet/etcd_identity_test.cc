// EtcdClient::guardIdentity(): an answer from another etcd — another cluster ID, or a
// revision below the highest seen — throws EtcdClusterChanged once, then the client
// carries on with the new one. Each test starts an etcd of its own (tests/etcd/etcd.sh)
// and wipes or replaces it behind the client's back: pause, empty its data, resume.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "fleet/etcd.hh"
#include "test_etcd.hh"

namespace mesh::fleet {
namespace {

namespace fs = std::filesystem;

class EtcdIdentity : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!::mesh::test::testEtcd().skipReason.empty())
      GTEST_SKIP() << ::mesh::test::testEtcd().skipReason;
    char tmpl[] = "/tmp/mesh-etcd-identity.XXXXXX";
    parent = ::mkdtemp(tmpl);
    dir = parent + "/etcd";
    int status = 0;
    const std::string out =
        ::mesh::test::shellOutput("ETCD_OWNER_PID=" + std::to_string(::getpid()) + " " +
                                      ::mesh::test::etcdScript() + " start " + dir,
                                  &status);
    ASSERT_EQ(status, 0) << out;
    url = out.substr(0, out.find('\n'));
  }
  void TearDown() override {
    if (parent.empty()) return;
    int status = 0;
    ::mesh::test::shellOutput(std::string(::mesh::test::etcdScript()) + " stop " + dir + " 2>&1",
                              &status);
    fs::remove_all(parent);
  }
  // Stops etcd, empties its data and starts it again on the same ports.
  void wipe(const std::string& token) {
    int status = 0;
    std::string out = ::mesh::test::shellOutput(
        std::string(::mesh::test::etcdScript()) + " pause " + dir + " 2>&1", &status);
    ASSERT_EQ(status, 0) << out;
    fs::remove_all(dir + "/data");
    out = ::mesh::test::shellOutput("ETCD_CLUSTER_TOKEN=" + token + " " +
                                        ::mesh::test::etcdScript() + " resume " + dir + " 2>&1",
                                    &status);
    ASSERT_EQ(status, 0) << out;
  }

  std::string parent, dir, url;
};

TEST_F(EtcdIdentity, AWipedEtcdIsNoticedByItsRevisionGoingBack) {
  EtcdClient client(url);
  client.guardIdentity();
  for (int i = 0; i < 10; ++i) client.put("/k", std::to_string(i));
  const auto before = client.identity();
  EXPECT_FALSE(before.clusterId.empty());
  EXPECT_GE(before.revision, 11);
  wipe("etcd-cluster");
  try {
    client.get("/k");
    ADD_FAILURE() << "a wiped etcd went unnoticed";
  } catch (const EtcdClusterChanged& e) {
    EXPECT_NE(std::string(e.what()).find("went back from revision"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(client.get("/k")) << "the new identity is adopted: the next call passes";
  EXPECT_LT(client.identity().revision, before.revision);
}

TEST_F(EtcdIdentity, AReplacedEtcdIsNoticedByItsClusterIdAlsoInAWatch) {
  EtcdClient client(url);
  client.guardIdentity();
  client.put("/k", "v");
  const auto before = client.identity();
  wipe("another-cluster");
  try {
    // A watch from a revision the new etcd has not reached: only its header tells.
    client.watch(
        "/k", before.revision + 1, [](const auto&) { return false; }, std::chrono::seconds(5));
    ADD_FAILURE() << "a replaced etcd went unnoticed";
  } catch (const EtcdClusterChanged& e) {
    EXPECT_NE(std::string(e.what()).find("is another cluster now"), std::string::npos) << e.what();
  }
  EXPECT_NE(client.identity().clusterId, before.clusterId);
}

TEST_F(EtcdIdentity, AnUnguardedClientOnlyRecordsTheIdentity) {
  EtcdClient client(url);
  client.put("/k", "v");
  const auto before = client.identity();
  wipe("another-cluster");
  EXPECT_NO_THROW(client.get("/k"));
  EXPECT_NE(client.identity().clusterId, before.clusterId);
}

}  // namespace
}  // namespace mesh::fleet
