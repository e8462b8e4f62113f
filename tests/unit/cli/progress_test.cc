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

TEST(Progress, SaysBytesWithTheirRateAndEta) {
  EXPECT_EQ(Progress::bytesText(512), "512 B");
  EXPECT_EQ(Progress::bytesText(12 * 1024 + 512), "12.5 KiB");
  EXPECT_EQ(Progress::bytesText(uint64_t{200} << 20), "200.0 MiB");
  EXPECT_EQ(Progress::bytesText(uint64_t{3} << 30), "3.0 GiB");
  EXPECT_EQ(Progress::bytesLine("unpacking /opt/app", uint64_t{50} << 20, uint64_t{200} << 20,
                                milliseconds(2000)),
            "unpacking /opt/app  50.0 MiB/200.0 MiB  25%  25.0 MiB/s  ETA 6s");
  // A download whose size is not announced: bytes and rate only.
  EXPECT_EQ(Progress::bytesLine("downloading sha256:ab", 2048, 0, milliseconds(1000)),
            "downloading sha256:ab  2.0 KiB  2.0 KiB/s");
}

TEST(Progress, DrawsBytesInPlaceOnlyOnATerminalAfterTheQuietSpell) {
  const auto t0 = Progress::Clock::now();
  testing::internal::CaptureStderr();
  {
    Progress off(false, t0);
    off.updateBytes("unpacking /a", 10, 100, t0 + milliseconds(5000));
    Progress quick(true, t0);
    quick.updateBytes("unpacking /a", 10, 100, t0 + Progress::kQuiet - milliseconds(1));
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  testing::internal::CaptureStderr();
  {
    Progress p(true, t0);
    p.updateBytes("unpacking /a", 50, 100, t0 + milliseconds(1000));
  }
  const std::string drawn = testing::internal::GetCapturedStderr();
  EXPECT_NE(drawn.find("\r\033[Kunpacking /a  50 B/100 B  50%"), std::string::npos) << drawn;
  EXPECT_TRUE(drawn.ends_with("\r\033[K")) << "erased when done";
}

}  // namespace
}  // namespace mesh::cli
