// The bounded history of outcomes.
#include <gtest/gtest.h>

#include "state/store.hh"
#include "state_test.hh"

namespace mesh::state {
namespace {

using testing::RawDb;
using HistoryTest = testing::StateTest;

HistoryEntry entry(int64_t cycle, const std::string& id, const std::string& outcome = "updated") {
  return HistoryEntry{.cycle = cycle,
                      .id = id,
                      .outcome = outcome,
                      .reason = "drift",
                      .want = "sha256:w" + std::to_string(cycle),
                      .wrote = "sha256:r" + std::to_string(cycle),
                      .at = cycle * 1000};
}

std::vector<std::string> idsAndCycles(const std::vector<HistoryEntry>& h) {
  std::vector<std::string> out;
  for (const auto& e : h) out.push_back(e.id + "@" + std::to_string(e.cycle));
  return out;
}

TEST_F(HistoryTest, NewestFirstWithEveryField) {
  auto store = Store::open(dir);
  store.addHistory(entry(1, "m.a", "created"));
  store.addHistory(entry(2, "m.a"));
  store.addHistory(entry(2, "m.b"));  // same cycle, added later: newer
  store.addHistory(entry(3, "m.b", "failed"));

  auto all = store.history("", 0);
  EXPECT_EQ(idsAndCycles(all), (std::vector<std::string>{"m.b@3", "m.b@2", "m.a@2", "m.a@1"}));
  const auto& oldest = all.back();
  EXPECT_EQ(oldest.outcome, "created");
  EXPECT_EQ(oldest.reason, "drift");
  EXPECT_EQ(oldest.want, "sha256:w1");
  EXPECT_EQ(oldest.wrote, "sha256:r1");
  EXPECT_EQ(oldest.at, 1000);
}

TEST_F(HistoryTest, FiltersByIdAndLimits) {
  auto store = Store::open(dir);
  for (int64_t c = 1; c <= 5; ++c) {
    store.addHistory(entry(c, "m.a"));
    store.addHistory(entry(c, "m.b"));
  }
  EXPECT_EQ(idsAndCycles(store.history("m.a", 0)),
            (std::vector<std::string>{"m.a@5", "m.a@4", "m.a@3", "m.a@2", "m.a@1"}));
  EXPECT_EQ(idsAndCycles(store.history("m.b", 2)), (std::vector<std::string>{"m.b@5", "m.b@4"}));
  EXPECT_EQ(store.history("", 3).size(), 3u);
  EXPECT_TRUE(store.history("m.none", 10).empty());
}

TEST_F(HistoryTest, KeepsOnlyTheLastHistoryCycles) {
  auto store = Store::open(dir);
  const int64_t n = Store::kHistoryCycles;
  for (int64_t c = 1; c <= n + 5; ++c) store.addHistory(entry(c, "m.a"));

  auto h = store.history("m.a", 0);
  ASSERT_EQ(static_cast<int64_t>(h.size()), n);
  EXPECT_EQ(h.front().cycle, n + 5);
  EXPECT_EQ(h.back().cycle, 6) << "cycles <= current - kHistoryCycles are gone";
}

TEST_F(HistoryTest, TrimmingAlsoHappensAfterReopen) {
  {
    auto store = Store::open(dir);
    store.addHistory(entry(1, "m.a"));
    store.addHistory(entry(2, "m.a"));
  }
  auto store = Store::open(dir);
  store.addHistory(entry(Store::kHistoryCycles + 1, "m.b"));
  EXPECT_EQ(
      idsAndCycles(store.history("", 0)),
      (std::vector<std::string>{"m.b@" + std::to_string(Store::kHistoryCycles + 1), "m.a@2"}));
}

TEST_F(HistoryTest, TrimUndoneByRollbackIsRedone) {
  auto store = Store::open(dir);
  store.addHistory(entry(1, "m.a"));
  const int64_t late = Store::kHistoryCycles + 1;
  {
    Store::Txn txn(store);
    store.addHistory(entry(late, "m.b"));  // trims cycle 1, then rolls back
  }
  store.addHistory(entry(late, "m.c"));
  EXPECT_EQ(idsAndCycles(store.history("", 0)),
            (std::vector<std::string>{"m.c@" + std::to_string(late)}));
}

TEST_F(HistoryTest, QueriesUseTheIndexes) {
  { Store::open(dir); }
  RawDb raw(db);
  auto plan = [&](const std::string& sql) { return raw.rows("EXPLAIN QUERY PLAN " + sql, 3); };
  EXPECT_NE(plan("SELECT * FROM history WHERE id = 'x' ORDER BY cycle DESC, rowid DESC LIMIT 5")
                .find("history_by_id"),
            std::string::npos);
  EXPECT_NE(plan("DELETE FROM history WHERE cycle <= 5").find("history_by_cycle"),
            std::string::npos);
}

}  // namespace
}  // namespace mesh::state
