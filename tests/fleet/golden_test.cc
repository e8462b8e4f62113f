// `fleet status`'s text output against a golden file (tests/golden/fleet_status.txt,
// tests/support/golden.hh): simulated nodes in every state, as status_test.cc puts
// them. Normalised: times and durations, this test's cluster name, etcd revisions
// (the etcd is shared by the binary's tests, so they depend on what ran before) and
// the operator key's id, ages ("3s ago"). MESH_GOLDEN_ACCEPT=1 ctest -R Golden rewrites the file.
#include <regex>

#include "../support/golden.hh"
#include "fleet_fixture.hh"
#include "util/digest.hh"

namespace mesh::fleet::test {
namespace {

namespace support = ::mesh::test;

using Golden = FleetTest;

TEST_F(Golden, FleetStatus) {
  const auto rev = putDeclaration("conv", 6);
  publish(nodeStatus("conv", rev, 6), true);

  const auto earlier = putDeclaration("behind", 6);
  const auto later = putDeclaration("behind", 7);
  (void)later;
  publish(nodeStatus("behind", earlier, 6), true);

  const auto downRev = putDeclaration("down", 6);
  publish(nodeStatus("down", downRev, 6), false);
  putDeclaration("never", 6);  // pushed to, never started

  const auto refRev = putDeclaration("refusing", 7);
  auto refusing = nodeStatus("refusing", refRev - 1, 6);
  refusing.refused =
      NodeStatus::Refusal{refRev,
                          7,
                          "signed by mesh-op:xyz, not trusted",
                          1,
                          valueDigest(client->get(keys.declaration("refusing"))->value),
                          ""};
  publish(refusing, true);

  const auto failRev = putDeclaration("failing", 6);
  auto failing = nodeStatus("failing", failRev, 6);
  failing.failed = 1;
  failing.failing = {{"demo.config", "permission denied"}};
  publish(failing, true);

  const auto churnRev = putDeclaration("churning", 6);
  auto churning = nodeStatus("churning", churnRev, 6);
  churning.churning = {"demo.runtime"};
  publish(churning, true);

  const Result r = status();
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(
      support::matchesGolden("fleet_status", r.out,
                             {support::Replace(cluster, "<cluster>"),
                              support::Replace(std::regex(R"(\brevision \d+)"), "revision <n>"),
                              support::Replace(std::regex(R"(\b\d+[smhd] ago\b)"), "<n>s ago"),
                              support::Replace(std::regex(R"(mesh-op:\S+…)"), "mesh-op:<key>…")}));
}

}  // namespace
}  // namespace mesh::fleet::test
