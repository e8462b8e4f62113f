// The one time-span parser: systemd.time(7)'s grammar, as command-line options,
// unit keys at parse and the built-in supervisor all read it.
#include "util/timespan.hh"

#include <gtest/gtest.h>

namespace mesh {
namespace {

TEST(TimeSpan, ReadsSystemdSpans) {
  EXPECT_EQ(parseTimeSpanUs("90"), 90'000'000);
  EXPECT_EQ(parseTimeSpanUs("500ms"), 500'000);
  EXPECT_EQ(parseTimeSpanUs("5m"), 300'000'000);
  EXPECT_EQ(parseTimeSpanUs("5min"), 300'000'000);
  EXPECT_EQ(parseTimeSpanUs(" 1min 30s "), 90'000'000);
  EXPECT_EQ(parseTimeSpanUs("1min30s"), 90'000'000);
  EXPECT_EQ(parseTimeSpanUs("1.5h"), int64_t{5400} * 1'000'000);
  EXPECT_EQ(parseTimeSpanUs("2 days"), int64_t{172'800} * 1'000'000);
  EXPECT_EQ(parseTimeSpanUs("1w"), int64_t{604'800} * 1'000'000);
  EXPECT_EQ(parseTimeSpanUs("250us"), 250);
  EXPECT_EQ(parseTimeSpanUs("250µs"), 250);
  EXPECT_EQ(parseTimeSpanUs("infinity"), kTimeSpanInfinity);
  EXPECT_EQ(parseTimeSpanUs("999999999999h"), kTimeSpanInfinity);
}

TEST(TimeSpan, RefusesWhatIsNotOne) {
  for (const char* bad : {"", " ", "s", "5x", "5 parsecs", "-1", "-1s", "m5", "1s-", "inf", "5,5s"})
    EXPECT_FALSE(parseTimeSpanUs(bad)) << bad;
}

}  // namespace
}  // namespace mesh
