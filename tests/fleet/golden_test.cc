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
  (void)publishEveryState();

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
