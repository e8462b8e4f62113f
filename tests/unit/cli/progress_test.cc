// The terminal progress line: what it says, and that it stays quiet for short
// work and off a terminal.
#include "cli/progress.hh"

#include <gtest/gtest.h>

namespace mesh::cli {
namespace {

using std::chrono::milliseconds;

TEST(Progress, SaysCountPercentRateAndEta) {
  EXPECT_EQ(Progress::line(4200, 10000, milliseconds(1200)), "[ 4200/10000]  42%  3500/s  ETA 2s");
  EXPECT_EQ(Progress::line(10, 100000, milliseconds(1000)),
            "[    10/100000]   0%  10/s  ETA 166m39s");
  EXPECT_EQ(Progress::line(5, 5, milliseconds(1000)), "[5/5] 100%  5/s");
  EXPECT_EQ(Progress::line(0, 5, milliseconds(0)), "[0/5]   0%");
}

TEST(Progress, DrawsNothingWhenDisabledOrQuick) {
  const auto t0 = Progress::Clock::now();
  testing::internal::CaptureStderr();
  {
    Progress off(false, t0);
    off.update(1, 2, t0 + milliseconds(2000));
    Progress quick(true, t0);
    quick.update(1, 2, t0 + Progress::kQuiet - milliseconds(1));
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(Progress, RedrawsInPlaceAndErasesItself) {
  const auto t0 = Progress::Clock::now();
  testing::internal::CaptureStderr();
  {
    Progress p(true, t0);
    p.update(1, 4, t0 + milliseconds(1000));
    p.update(2, 4, t0 + milliseconds(1050));  // within kEvery: not drawn
    p.update(3, 4, t0 + milliseconds(1500));
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "\r\033[K[1/4]  25%  1/s  ETA 3s\r\033[K[3/4]  75%  2/s  ETA 1s\r\033[K");
}

}  // namespace
}  // namespace mesh::cli
