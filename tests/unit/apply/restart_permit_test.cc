#include "apply/restart_permit.hh"

#include <gtest/gtest.h>

#include <stdexcept>
#include <type_traits>

namespace mesh::apply {
namespace {

static_assert(!std::is_copy_constructible_v<RestartPermit>);
static_assert(!std::is_copy_assignable_v<RestartPermit>);

TEST(RestartPermit, FreesItsSlotOnceWhenReleasedThenDestroyed) {
  int freed = 0;
  {
    RestartPermit p([&] { ++freed; });
    EXPECT_TRUE(p.holds());
    p.release();
    EXPECT_EQ(freed, 1);
    EXPECT_FALSE(p.holds());
  }
  EXPECT_EQ(freed, 1);
}

TEST(RestartPermit, FreesItsSlotWhenTheRestartThrows) {
  int freed = 0;
  try {
    RestartPermit p([&] { ++freed; });
    throw std::runtime_error("restart failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(freed, 1);
}

TEST(RestartPermit, AMovedPermitFreesOnceFromItsNewHolder) {
  int freed = 0;
  RestartPermit to;
  {
    RestartPermit from([&] { ++freed; });
    to = std::move(from);
  }
  EXPECT_EQ(freed, 0);
  EXPECT_TRUE(to.holds());
  to = RestartPermit();  // replacing a held permit frees it
  EXPECT_EQ(freed, 1);
}

TEST(RestartPermit, NoLimitHoldsNothing) {
  RestartPermit p;
  EXPECT_FALSE(p.holds());
  p.release();
}

}  // namespace
}  // namespace mesh::apply
