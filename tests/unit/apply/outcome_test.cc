#include "apply/outcome.hh"

#include <gtest/gtest.h>

#include <type_traits>

#include "apply/applier.hh"

namespace mesh::apply {
namespace {

// An outcome cannot be built without the digest the machine holds, and a kind
// cannot name one at all: its decision has no digest field, and the outcome has
// no default constructor and no factory that takes a digest but from the cycle's
// want. (The bug this project was born from was an unchanged outcome that
// forgot it.)
static_assert(!std::is_default_constructible_v<Outcome>);
template <class O>
concept UnchangedTakesADigest = requires {
  O::unchanged(Digest{});
};
static_assert(!UnchangedTakesADigest<Outcome>);
static_assert(!UnchangedTakesADigest<Decision>);
template <class D>
concept HoldsADigest = requires(const D& d) {
  d.held();
};
static_assert(!HoldsADigest<Decision>);
static_assert(!HoldsADigest<Removal>);
// What a kind returns: a decision, a removal — never an outcome.
static_assert(std::is_same_v<decltype(std::declval<const Applier&>().reconcile(
                                 std::declval<Step&>(), std::declval<const decl::Resource&>(),
                                 std::declval<const Digest&>(), nullptr)),
                             Decision>);
static_assert(std::is_same_v<decltype(std::declval<const Applier&>().remove(
                                 std::declval<Step&>(), std::declval<const state::Record&>())),
                             Removal>);

state::Record recordOf(const Digest& wrote) {
  state::Record rec;
  rec.wrote = wrote.str();
  return rec;
}

TEST(Outcome, UnchangedCarriesItsDigest) {
  auto d = Digest::ofBytes("x");
  auto rec = recordOf(d);
  auto o = Outcome::of(Decision::unchanged(), d, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Unchanged);
  EXPECT_EQ(o.held(), d);
  EXPECT_EQ(o.reason(), "");
  EXPECT_FALSE(o.changed());
}

TEST(Outcome, UnchangedWithoutARecordIsAdopted) {
  auto d = Digest::ofBytes("x");
  auto o = Outcome::of(Decision::unchanged(), d, nullptr);
  EXPECT_EQ(o.held(), d);
  EXPECT_EQ(o.reason(), "adopted");
}

TEST(Outcome, AnEmptyWantIsRefused) {
  EXPECT_THROW(Outcome::of(Decision::unchanged(), Digest{}, nullptr), Error);
}

TEST(Outcome, ActingHoldsTheWantAndIsWordedByTheCycle) {
  auto want = Digest::ofBytes("want");
  auto created = Outcome::of(Decision::act(false, "deleted", "3 bytes"), want, nullptr);
  EXPECT_EQ(created.verdict(), Verdict::Created);
  EXPECT_EQ(created.held(), want);
  EXPECT_EQ(created.reason(), "new");
  EXPECT_EQ(created.detail(), "3 bytes");

  auto adopted = Outcome::of(Decision::act(true, "content changed", ""), want, nullptr);
  EXPECT_EQ(adopted.verdict(), Verdict::Updated);
  EXPECT_EQ(adopted.reason(), "adopted");

  auto old = recordOf(Digest::ofBytes("old"));
  EXPECT_EQ(Outcome::of(Decision::act(true, "x", ""), want, &old).reason(), "declared");
  auto same = recordOf(want);
  EXPECT_EQ(Outcome::of(Decision::act(true, "content changed", ""), want, &same).reason(),
            "drift: content changed");
}

TEST(Outcome, AKindsOwnReasonAndMoreAreKept) {
  auto want = Digest::ofBytes("want");
  auto rec = recordOf(Digest::ofBytes("old"));  // would word "declared"
  auto d = Decision::updated("drift: not running", "started a");
  d.addReason("restart-on b");
  auto o = Outcome::of(std::move(d), want, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "drift: not running; restart-on b");
  EXPECT_EQ(o.held(), want);

  auto bare = Decision::updated("", "restarted a");
  bare.addReason("restart-on b");
  EXPECT_EQ(Outcome::of(std::move(bare), want, &rec).reason(), "restart-on b");
}

TEST(Outcome, NotesAreCarriedOn) {
  auto d = Decision::act(true, "unit edited", "restarted a");
  d.observed = "obs";
  d.diff = "-x\n+y\n";
  d.warning = "careful";
  d.restartsDependents = false;
  d.activation = Activation::Restart;
  d.service = "a";
  auto o = Outcome::of(std::move(d), Digest::ofBytes("w"), nullptr);
  EXPECT_EQ(o.observed, "obs");
  EXPECT_EQ(o.diff, "-x\n+y\n");
  EXPECT_EQ(o.warning, "careful");
  EXPECT_FALSE(o.restartsDependents);
  EXPECT_EQ(o.activation, Activation::Restart);
  EXPECT_EQ(o.service, "a");
}

TEST(Outcome, RemovedHoldsNothing) {
  auto o = Outcome::of(Removal::removed("deleted"));
  EXPECT_TRUE(o.held().empty());
  EXPECT_EQ(o.verdict(), Verdict::Removed);
  EXPECT_EQ(o.reason(), "no longer declared");
  EXPECT_EQ(o.detail(), "deleted");
  EXPECT_TRUE(o.gone());
  auto released = Outcome::of(Removal::released("left in place"));
  EXPECT_EQ(released.verdict(), Verdict::Released);
  EXPECT_TRUE(released.held().empty());
}

TEST(Outcome, FailureAndSkipHoldWhatTheRecordSaysWasWritten) {
  auto wrote = Digest::ofBytes("old");
  auto rec = recordOf(wrote);
  EXPECT_EQ(Outcome::failed(&rec, "boom").held(), wrote);
  EXPECT_EQ(Outcome::skipped(&rec, "requires a").held(), wrote);
  EXPECT_TRUE(Outcome::failed(nullptr, "boom").held().empty());
  EXPECT_TRUE(Outcome::failed(&rec, "boom").notConverged());
}

TEST(Outcome, ChangedVerdicts) {
  auto d = Digest::ofBytes("x");
  EXPECT_TRUE(Outcome::of(Decision::act(false, "", ""), d, nullptr).changed());
  EXPECT_TRUE(Outcome::of(Decision::updated("drift", ""), d, nullptr).changed());
  EXPECT_FALSE(Outcome::failed(nullptr, "boom").changed());
}

TEST(Outcome, RetoldKeepsVerdictAndDigest) {
  auto d = Digest::ofBytes("x");
  auto u = Decision::unchanged();
  u.observed = "obs";
  auto o = Outcome::of(std::move(u), d, nullptr).retold("moved from /a");
  EXPECT_EQ(o.verdict(), Verdict::Unchanged);
  EXPECT_EQ(o.held(), d);
  EXPECT_EQ(o.reason(), "moved from /a");
  EXPECT_EQ(o.observed, "obs");
  auto r = Outcome::of(Decision::unchanged(), d, nullptr).replacing("kind changed", "x");
  EXPECT_EQ(r.verdict(), Verdict::Updated);
  EXPECT_EQ(r.held(), d);
}

// Each verdict is counted in the Tally field of its own name, and only there.
TEST(Verdicts, EachCountsInTheFieldOfItsName) {
  for (auto v : {Verdict::Unchanged, Verdict::Created, Verdict::Updated, Verdict::Removed,
                 Verdict::Released, Verdict::Skipped, Verdict::Failed}) {
    Tally t;
    count(t, v);
    for (const auto& [name, n] : t.named())
      EXPECT_EQ(n, name == verdictName(v) ? 1 : 0) << verdictName(v) << " in " << name;
  }
}

TEST(Reasons, ToAct) {
  auto want = Digest::ofBytes("want");
  EXPECT_EQ(reasonToAct(nullptr, want, false, "x"), "new");
  EXPECT_EQ(reasonToAct(nullptr, want, true, "x"), "adopted");
  state::Record rec;
  rec.wrote = Digest::ofBytes("old").str();
  EXPECT_EQ(reasonToAct(&rec, want, true, "x"), "declared");
  rec.wrote = want.str();
  EXPECT_EQ(reasonToAct(&rec, want, true, "content changed"), "drift: content changed");
}

TEST(Reasons, Unchanged) {
  state::Record rec;
  EXPECT_EQ(reasonUnchanged(nullptr), "adopted");
  EXPECT_EQ(reasonUnchanged(&rec), "");
}

}  // namespace
}  // namespace mesh::apply
