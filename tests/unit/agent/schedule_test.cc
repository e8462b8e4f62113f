#include "agent/schedule.hh"

#include <gtest/gtest.h>

namespace mesh::agent {
namespace {

using namespace std::chrono_literals;

const Clock::time_point t0 = Clock::time_point() + 1000s;

TEST(NextPeriodicCycle, IsIntervalAfterTheEndWithNoSplay) {
  EXPECT_EQ(nextPeriodicCycle(t0, 5min, 0ms, 12345), t0 + 5min);
}

TEST(NextPeriodicCycle, AddsASplayWithinZeroToSplayInclusive) {
  EXPECT_EQ(nextPeriodicCycle(t0, 1s, 30ms, 0), t0 + 1s);
  EXPECT_EQ(nextPeriodicCycle(t0, 1s, 30ms, 30), t0 + 1s + 30ms);
  EXPECT_EQ(nextPeriodicCycle(t0, 1s, 30ms, 31), t0 + 1s);
  for (uint64_t bits : {uint64_t{7}, uint64_t{1} << 63, ~uint64_t{0}}) {
    auto at = nextPeriodicCycle(t0, 1s, 30ms, bits);
    EXPECT_GE(at, t0 + 1s);
    EXPECT_LE(at, t0 + 1s + 30ms);
  }
}

TEST(Debounce, OneBurstOfEventsCountsOnceAfterTheQuietPeriod) {
  Debounce d(200ms);
  EXPECT_FALSE(d.deadline());
  EXPECT_FALSE(d.take(t0));
  d.poke(t0);
  d.poke(t0 + 50ms);  // write, close, rename: the period restarts
  d.poke(t0 + 120ms);
  EXPECT_EQ(d.deadline(), t0 + 320ms);
  EXPECT_FALSE(d.take(t0 + 319ms));
  EXPECT_TRUE(d.take(t0 + 320ms));
  EXPECT_FALSE(d.take(t0 + 400ms)) << "reported twice";
  EXPECT_FALSE(d.deadline());
}

TEST(WaitMillis, WaitsForTheEarliestDeadlineRoundedUp) {
  EXPECT_EQ(waitMillis(t0, {}), -1);
  EXPECT_EQ(waitMillis(t0, {std::nullopt, std::nullopt}), -1);
  EXPECT_EQ(waitMillis(t0, {t0 + 5s, std::nullopt, t0 + 200ms}), 200);
  EXPECT_EQ(waitMillis(t0, {t0 + 1us}), 1) << "a wake-up a millisecond early would spin";
  EXPECT_EQ(waitMillis(t0, {t0 - 1s, t0 + 1s}), 0);
}

}  // namespace
}  // namespace mesh::agent
