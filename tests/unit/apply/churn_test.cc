// Churn is computed from history alone: repeated changes whose want stayed the
// same. A changing declaration is never churn.
#include "apply/churn.hh"

#include <gtest/gtest.h>

#include <array>
#include <string>

namespace mesh::apply {
namespace {

using state::HistoryEntry;

// Builds history newest first, as Store::history returns it.
class History {
 public:
  History& add(int64_t cycle, const std::string& id, const std::string& outcome,
               const std::string& reason, const std::string& want) {
    entries_.insert(entries_.begin(), HistoryEntry{cycle, id, outcome, reason, want, want, 0});
    return *this;
  }
  const std::vector<HistoryEntry>& entries() const { return entries_; }

 private:
  std::vector<HistoryEntry> entries_;
};

TEST(Churn, DriftRepairedAgainAndAgainIsChurning) {
  History h;
  h.add(1, "m.x", "created", "new", "sha256:a");
  for (int64_t c = 2; c <= 4; ++c) h.add(c, "m.x", "updated", "drift: content changed", "sha256:a");
  auto churn = computeChurn(h.entries(), 4);
  ASSERT_TRUE(churn.count("m.x"));
  EXPECT_TRUE(churn["m.x"].churning);
  EXPECT_EQ(churn["m.x"].changes, 3);
  EXPECT_EQ(churn["m.x"].reasonText(), "drift: content changed ×3");
}

TEST(Churn, DeclaredChangeEveryCycleIsNotChurning) {
  History h;
  for (int64_t c = 1; c <= 6; ++c)
    h.add(c, "m.x", c == 1 ? "created" : "updated", c == 1 ? "new" : "declared",
          "sha256:" + std::to_string(c));
  EXPECT_FALSE(computeChurn(h.entries(), 6).count("m.x"));
}

TEST(Churn, TheWantDecidesNotTheReasonText) {
  // A reason that says "declared" while the want did not change is still churn
  // (the record was lost and the applier could not tell); a "drift" reason with a
  // new want is the declaration's doing.
  History h;
  h.add(1, "m.x", "created", "new", "sha256:a");
  h.add(2, "m.x", "updated", "declared", "sha256:a");
  h.add(3, "m.x", "updated", "declared", "sha256:a");
  h.add(4, "m.y", "created", "new", "sha256:b");
  h.add(5, "m.y", "updated", "drift: content changed", "sha256:c");
  h.add(6, "m.y", "updated", "drift: content changed", "sha256:d");
  auto churn = computeChurn(h.entries(), 6);
  EXPECT_TRUE(churn["m.x"].churning);
  EXPECT_FALSE(churn.count("m.y"));
}

TEST(Churn, OnlyTheWindowCounts) {
  History h;
  h.add(1, "m.x", "created", "new", "sha256:a");
  h.add(2, "m.x", "updated", "drift: mode", "sha256:a");
  h.add(3, "m.x", "updated", "drift: mode", "sha256:a");
  EXPECT_TRUE(computeChurn(h.entries(), 3).at("m.x").churning);
  EXPECT_FALSE(computeChurn(h.entries(), 13).count("m.x"));  // cycles 4..13: nothing
  auto one = computeChurn(h.entries(), 12);                  // cycles 3..12: one change
  EXPECT_EQ(one.at("m.x").changes, 1);
  EXPECT_FALSE(one.at("m.x").churning);
}

TEST(Churn, ThresholdAndWindowAreConfigurable) {
  History h;
  h.add(1, "m.x", "created", "new", "sha256:a");
  h.add(2, "m.x", "updated", "drift: mode", "sha256:a");
  h.add(5, "m.x", "updated", "drift: mode", "sha256:a");
  EXPECT_FALSE(computeChurn(h.entries(), 5, {3, 10}).at("m.x").churning);
  EXPECT_FALSE(computeChurn(h.entries(), 5, {2, 2}).at("m.x").churning);
  EXPECT_TRUE(computeChurn(h.entries(), 5, {2, 4}).at("m.x").churning);
}

TEST(Churn, ReasonsAreCountedMostFrequentFirst) {
  History h;
  h.add(1, "m.x", "created", "new", "sha256:a");
  h.add(2, "m.x", "updated", "drift: mode", "sha256:a");
  h.add(3, "m.x", "created", "drift: deleted", "sha256:a");
  h.add(4, "m.x", "created", "drift: deleted", "sha256:a");
  EXPECT_EQ(computeChurn(h.entries(), 4).at("m.x").reasonText(),
            "drift: deleted ×2, drift: mode ×1");
}

TEST(Churn, RecreatedAfterRemovalIsDeclared) {
  History h;
  h.add(1, "m.x", "created", "new", "sha256:a");
  h.add(2, "m.x", "removed", "no longer declared", "");
  h.add(3, "m.x", "created", "new", "sha256:a");
  h.add(4, "m.x", "removed", "no longer declared", "");
  h.add(5, "m.x", "created", "new", "sha256:a");
  EXPECT_FALSE(computeChurn(h.entries(), 5).count("m.x"));
}

TEST(Churn, FailuresInBetweenDoNotHideChurn) {
  History h;
  h.add(1, "m.x", "created", "new", "sha256:a");
  h.add(2, "m.x", "failed", "cannot read blob", "");  // no want computed
  h.add(3, "m.x", "updated", "drift: content changed", "sha256:a");
  h.add(4, "m.x", "failed", "disk full", "sha256:a");
  h.add(5, "m.x", "updated", "drift: content changed", "sha256:a");
  EXPECT_TRUE(computeChurn(h.entries(), 5).at("m.x").churning);
}

// A declared change that failed (a full disk) and then succeeded is the declared
// change made late, not churn: the failure's want was never held.
TEST(Churn, ADeclaredChangeThatFailedOnceIsNotChurn) {
  History h;
  h.add(1, "m.x", "created", "new", "sha256:a");
  h.add(2, "m.x", "failed", "cannot write /srv/x: No space left on device", "sha256:b");
  h.add(3, "m.x", "updated", "declared", "sha256:b");
  h.add(4, "m.x", "failed", "cannot write /srv/x: No space left on device", "sha256:c");
  h.add(5, "m.x", "updated", "declared", "sha256:c");
  EXPECT_FALSE(computeChurn(h.entries(), 5).count("m.x"));
}

TEST(Churn, HistoryTrimmedFallsBackOnTheReason) {
  History h;  // the first entries were trimmed away
  h.add(300, "m.x", "updated", "drift: content changed", "sha256:a");
  h.add(301, "m.y", "updated", "declared", "sha256:b");
  auto churn = computeChurn(h.entries(), 301);
  EXPECT_EQ(churn.at("m.x").changes, 1);
  EXPECT_FALSE(churn.count("m.y"));
}

// A process that restarts or reloads for a cause churns only when its cause
// churned. `run` holds the process's reasons in cycles 2 to 5: in 2 and 3 its
// config is re-declared (no churn), in 4 and 5 someone edits the config behind
// our back (both churn).
void expectChurnOnlyWhenTheCauseChurned(const std::array<std::string, 4>& run) {
  History h;
  h.add(1, "m.config", "created", "new", "sha256:c1");
  h.add(1, "m.run", "created", "new", "sha256:p");
  h.add(2, "m.config", "updated", "declared", "sha256:c2");
  h.add(2, "m.run", "updated", run[0], "sha256:p");
  h.add(3, "m.config", "updated", "declared", "sha256:c3");
  h.add(3, "m.run", "updated", run[1], "sha256:p");
  EXPECT_TRUE(computeChurn(h.entries(), 3).empty()) << "a declared cause is no churn";
  h.add(4, "m.config", "updated", "drift: content changed", "sha256:c3");
  h.add(4, "m.run", "updated", run[2], "sha256:p");
  h.add(5, "m.config", "updated", "drift: content changed", "sha256:c3");
  h.add(5, "m.run", "updated", run[3], "sha256:p");
  auto churn = computeChurn(h.entries(), 5);
  EXPECT_TRUE(churn.at("m.config").churning);
  EXPECT_TRUE(churn.at("m.run").churning);
  EXPECT_EQ(churn.at("m.run").changes, 2);
}

TEST(Churn, RestartOnCountsOnlyWhenItsCauseChurned) {
  expectChurnOnlyWhenTheCauseChurned({"restart-on m.config", "restart-on m.config, m.key",
                                      "restart-on m.config", "restart-on m.key, m.config"});
}

// The same rule for reload-on causes, alone or after restart-on ones.
TEST(Churn, ReloadOnCountsOnlyWhenItsCauseChurned) {
  expectChurnOnlyWhenTheCauseChurned({"reload-on m.config", "restart-on m.key; reload-on m.config",
                                      "reload-on m.config",
                                      "restart-on m.key; reload-on m.config"});
}

TEST(Churn, UndeclaredChangeNeedsAChangeOutcome) {
  HistoryEntry h{1, "m.x", "unchanged", "", "sha256:a", "sha256:a", 0};
  EXPECT_FALSE(isUndeclaredChange(h, true, "sha256:a"));
  h.outcome = "updated";
  EXPECT_TRUE(isUndeclaredChange(h, true, "sha256:a"));
  EXPECT_FALSE(isUndeclaredChange(h, true, "sha256:b"));
  h.reason = "adopted";
  EXPECT_FALSE(isUndeclaredChange(h, false, ""));
}

}  // namespace
}  // namespace mesh::apply
