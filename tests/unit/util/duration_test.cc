#include "util/duration.hh"

#include <gtest/gtest.h>

#include "util/error.hh"

namespace mesh {
namespace {

using std::chrono::milliseconds;

TEST(Duration, ParsesEveryUnitAndPlainSeconds) {
  EXPECT_EQ(parseDuration("500ms", "--x"), milliseconds(500));
  EXPECT_EQ(parseDuration("30s", "--x"), milliseconds(30'000));
  EXPECT_EQ(parseDuration("5m", "--x"), milliseconds(300'000));
  EXPECT_EQ(parseDuration("1h", "--x"), milliseconds(3'600'000));
  EXPECT_EQ(parseDuration("12", "--x"), milliseconds(12'000));
  EXPECT_EQ(parseDuration("0", "--x"), milliseconds(0));
  // systemd's spellings too: the same parser reads unit keys (RestartSec=).
  EXPECT_EQ(parseDuration("5min", "--x"), milliseconds(300'000));
  EXPECT_EQ(parseDuration("1h 30min", "--x"), milliseconds(5'400'000));
  EXPECT_EQ(parseDuration("1min30s", "--x"), milliseconds(90'000));
  EXPECT_EQ(parseDuration("1.5s", "--x"), milliseconds(1500));
  EXPECT_EQ(parseDuration("5 m", "--x"), milliseconds(300'000));
  EXPECT_EQ(parseDuration("2 days", "--x"), milliseconds(172'800'000));
  EXPECT_EQ(parseDuration("1500us", "--x"), milliseconds(2));  // rounded up
}

TEST(Duration, RejectsWhatIsNotADurationNamingTheOption) {
  for (const char* bad :
       {"", "s", "5x", "-1s", "m5", "5 parsecs", "infinity", "99999999999999999h"}) {
    try {
      (void)parseDuration(bad, "--interval");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--interval"), std::string::npos) << e.what();
    }
  }
}

TEST(Duration, FormatsTheShortestExactForm) {
  EXPECT_EQ(formatDuration(milliseconds(300'000)), "5m");
  EXPECT_EQ(formatDuration(milliseconds(7'200'000)), "2h");
  EXPECT_EQ(formatDuration(milliseconds(30'000)), "30s");
  EXPECT_EQ(formatDuration(milliseconds(1500)), "1500ms");
  EXPECT_EQ(formatDuration(milliseconds(0)), "0s");
}

}  // namespace
}  // namespace mesh
