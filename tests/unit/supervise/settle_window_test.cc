// SettleWindow (supervise/settle_window.hh): the settle rule's bookkeeping shared
// by both backends, on a virtual clock — the backend's wait advances it, so what
// is waited for and when each service is judged are exact.
#include "supervise/settle_window.hh"

#include <gtest/gtest.h>

namespace mesh::supervise {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class SettleWindowTest : public ::testing::Test {
 protected:
  Clock::time_point now{std::chrono::hours(1)};
  SettleWindow<int> window{kSettle, [this] { return now; }};
  std::vector<std::chrono::milliseconds> waits;
  // (name, token, the clock when judged)
  std::vector<std::tuple<std::string, int, Clock::time_point>> judged;
  std::map<std::string, std::string> verdicts;  // what the judge says; "" stayed up

  std::map<std::string, std::string> settle(const std::vector<std::string>& names) {
    return window.settle(
        names,
        [this](std::chrono::milliseconds left) {
          waits.push_back(left);
          now += left;
        },
        [this](const std::string& name, const int& token) {
          judged.emplace_back(name, token, now);
          return verdicts[name];
        });
  }
};

TEST_F(SettleWindowTest, AServiceIsJudgedOnceItHasBeenUpTheWindow) {
  window.launched("a.service", 42, false);
  now += 30ms;
  verdicts["a.service"] = "exited with status 1";
  auto failed = settle({"a.service"});
  EXPECT_EQ(waits, std::vector<std::chrono::milliseconds>{70ms});
  ASSERT_EQ(judged.size(), 1u);
  EXPECT_EQ(std::get<1>(judged[0]), 42) << "the judge gets the backend's token";
  EXPECT_EQ(std::get<2>(judged[0]), Clock::time_point{std::chrono::hours(1)} + kSettle);
  EXPECT_EQ(failed, (std::map<std::string, std::string>{{"a.service", "exited with status 1"}}));
}

// Settling many costs one window: the deadline is the last launch's.
TEST_F(SettleWindowTest, ManyStartsShareOneWindowEndingAfterTheLast) {
  window.launched("a.service", 1, false);
  now += 40ms;
  window.launched("b.service", 2, false);
  now += 20ms;
  verdicts["b.service"] = "it stopped";
  auto failed = settle({"a.service", "b.service"});
  EXPECT_EQ(waits, std::vector<std::chrono::milliseconds>{80ms});
  ASSERT_EQ(judged.size(), 2u);
  EXPECT_EQ(std::get<0>(judged[0]), "a.service");
  EXPECT_EQ(std::get<0>(judged[1]), "b.service");
  EXPECT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed["b.service"], "it stopped");
}

// A wait that returns early (a signal, a bus message) is waited again for the rest.
TEST_F(SettleWindowTest, AWaitThatReturnsEarlyIsResumed) {
  window.launched("a.service", 1, false);
  int calls = 0;
  window.settle(
      {"a.service"},
      [&](std::chrono::milliseconds left) {
        ++calls;
        now += std::min<std::chrono::milliseconds>(left, 30ms);
      },
      [&](const std::string&, const int&) {
        EXPECT_GE(now, Clock::time_point{std::chrono::hours(1)} + kSettle);
        return std::string();
      });
  EXPECT_EQ(calls, 4);  // 30 + 30 + 30 + 10
}

// Regression (the deadline once started at time_point::min(), and min() less now
// overflowed into a wait of weeks): nothing to judge is no wait at all.
TEST_F(SettleWindowTest, NothingToJudgeReturnsAtOnceWithoutAWait) {
  EXPECT_TRUE(settle({"never-started.service"}).empty());
  window.launched("notify.service", 1, /*windowless=*/true);
  EXPECT_TRUE(settle({"notify.service"}).empty());
  EXPECT_TRUE(waits.empty());
  EXPECT_TRUE(judged.empty());
  EXPECT_FALSE(window.pending("notify.service")) << "settled, even with no window";
}

// Past the window already (a slow cycle): judged at once.
TEST_F(SettleWindowTest, ALaunchPastItsWindowIsJudgedWithoutAWait) {
  window.launched("a.service", 1, false);
  now += 500ms;
  settle({"a.service"});
  EXPECT_TRUE(waits.empty());
  EXPECT_EQ(judged.size(), 1u);
}

TEST_F(SettleWindowTest, EachLaunchIsSettledOnceAndAStopForgetsIt) {
  window.launched("a.service", 1, false);
  window.launched("b.service", 2, false);
  window.forget("b.service");
  EXPECT_TRUE(window.pending("a.service"));
  EXPECT_FALSE(window.pending("b.service"));
  settle({"a.service", "b.service"});
  EXPECT_EQ(judged.size(), 1u);
  settle({"a.service"});
  EXPECT_EQ(judged.size(), 1u) << "a launch is judged once";
  EXPECT_FALSE(window.pending("a.service"));
}

// A restart replaces the start before it: its own time, its own token.
TEST_F(SettleWindowTest, ARelaunchReplacesTheEarlierOne) {
  window.launched("a.service", 1, false);
  now += 90ms;
  window.launched("a.service", 2, false);
  settle({"a.service"});
  EXPECT_EQ(waits, std::vector<std::chrono::milliseconds>{kSettle});
  ASSERT_EQ(judged.size(), 1u);
  EXPECT_EQ(std::get<1>(judged[0]), 2);
}

// Only the names asked for are settled; others stay for a later settle().
TEST_F(SettleWindowTest, NamesNotAskedForStayPending) {
  window.launched("a.service", 1, false);
  window.launched("b.service", 2, false);
  settle({"a.service"});
  EXPECT_TRUE(window.pending("b.service"));
}

TEST(SettleReason, NamesHowItEndedAndItsLastLineCutAt500Bytes) {
  EXPECT_EQ(notSettled("exited with status 1", ""),
            "exited with status 1 within 100ms of its start");
  EXPECT_EQ(notSettled("exited with status 1", "config is broken"),
            "exited with status 1 within 100ms of its start: config is broken");
  const std::string longLine(2000, 'x');
  EXPECT_EQ(notSettled("it stopped", longLine),
            "it stopped within 100ms of its start: " + std::string(500, 'x'));
  // Bytes from outside stay as they are here; they are escaped where shown.
  EXPECT_EQ(reasonLine("\x1b[2J\xff"), "\x1b[2J\xff");
}

}  // namespace
}  // namespace mesh::supervise
