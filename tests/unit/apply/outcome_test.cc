#include "apply/outcome.hh"

#include <gtest/gtest.h>

#include <type_traits>

#include "apply/applier.hh"

namespace mesh::apply {
namespace {

// An outcome cannot be built without the digest the machine holds: there is no
// default constructor and no factory without one. (The bug this project was born
// from was an unchanged outcome that forgot it.)
static_assert(!std::is_default_constructible_v<Outcome>);

TEST(Outcome, UnchangedCarriesItsDigest) {
  auto d = Digest::ofBytes("x");
  auto o = Outcome::unchanged(d);
  EXPECT_EQ(o.verdict(), Verdict::Unchanged);
  EXPECT_EQ(o.held(), d);
  EXPECT_FALSE(o.changed());
}

TEST(Outcome, RemovedHoldsNothing) {
  auto o = Outcome::removed("no longer declared");
  EXPECT_TRUE(o.held().empty());
  EXPECT_EQ(o.verdict(), Verdict::Removed);
}

TEST(Outcome, ChangedVerdicts) {
  auto d = Digest::ofBytes("x");
  EXPECT_TRUE(Outcome::created(d, "new", "").changed());
  EXPECT_TRUE(Outcome::updated(d, "drift", "").changed());
  EXPECT_FALSE(Outcome::failed(d, "boom").changed());
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
