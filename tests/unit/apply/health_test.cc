// The health rule `mesh-host status` reports and exits by (apply/health.hh).
#include "apply/health.hh"

#include <gtest/gtest.h>

namespace mesh::apply {
namespace {

TEST(ResourceHealth, FailedOrSkippedIsFailedWhateverTheService) {
  for (const char* outcome : {"failed", "skipped"}) {
    for (std::optional<bool> running :
         {std::optional<bool>(), std::optional<bool>(false), std::optional<bool>(true)}) {
      const auto h = resourceHealth(outcome, running);
      EXPECT_TRUE(h.failed) << outcome;
      EXPECT_FALSE(h.down) << outcome << ": a failed resource is not also down";
    }
  }
}

TEST(ResourceHealth, AServiceNotRunningIsDown) {
  const auto h = resourceHealth("unchanged", false);
  EXPECT_FALSE(h.failed);
  EXPECT_TRUE(h.down);
}

TEST(ResourceHealth, RunningOrUnknownOrNoServiceIsNeither) {
  for (std::optional<bool> running : {std::optional<bool>(), std::optional<bool>(true)}) {
    for (const char* outcome : {"unchanged", "created", "updated", "removed"}) {
      const auto h = resourceHealth(outcome, running);
      EXPECT_FALSE(h.failed) << outcome;
      EXPECT_FALSE(h.down) << outcome;
    }
  }
}

TEST(NodeHealth, HealthyOnlyWithNothingFailingChurningOrInError) {
  EXPECT_TRUE(NodeHealth{}.healthy());
  NodeHealth h;
  h.add(resourceHealth("unchanged", true));
  EXPECT_TRUE(h.healthy());
  EXPECT_EQ(h.failing, 0);

  auto with = [](auto set) {
    NodeHealth n;
    set(n);
    return n.healthy();
  };
  EXPECT_FALSE(with([](NodeHealth& n) { n.add(resourceHealth("failed", std::nullopt)); }));
  EXPECT_FALSE(with([](NodeHealth& n) { n.add(resourceHealth("unchanged", false)); }));
  EXPECT_FALSE(with([](NodeHealth& n) { n.churning = 1; }));
  EXPECT_FALSE(with([](NodeHealth& n) { n.cycleError = true; }));
  EXPECT_FALSE(with([](NodeHealth& n) { n.declarationError = true; }));
  EXPECT_FALSE(with([](NodeHealth& n) { n.supervisorError = true; }));
  EXPECT_FALSE(with([](NodeHealth& n) { n.cutShort = true; }));
}

TEST(NodeHealth, CountsAResourceFailingOnce) {
  NodeHealth h;
  h.add(resourceHealth("failed", false));
  h.add(resourceHealth("unchanged", false));
  h.add(resourceHealth("unchanged", true));
  EXPECT_EQ(h.failing, 2);
}

}  // namespace
}  // namespace mesh::apply
