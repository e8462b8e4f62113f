// `link` on its own (kinds/link.cc): observe and decide on a real temp tree,
// through the fixture that stands in for the cycle (kind_fixture.hh).
#include <unistd.h>

#include <filesystem>

#include "kind_fixture.hh"

namespace mesh::apply::test {
namespace {

class LinkKind : public KindTest {
 protected:
  const decl::Resource& current(const std::string& target = "/srv/web-2") {
    return declare("[module.web.link.current]\npath = \"/srv/current\"\ntarget = \"" + target +
                   "\"\n");
  }
  std::string targetOf(const std::string& declared) const {
    return std::filesystem::read_symlink(at(declared)).string();
  }
};

TEST_F(LinkKind, AbsentIsCreatedPointingAtItsTarget) {
  const auto& r = current();
  const Outcome o = converge(r);
  EXPECT_EQ(o.verdict(), Verdict::Created);
  EXPECT_EQ(o.reason(), "new");
  EXPECT_EQ(o.detail(), "-> /srv/web-2");
  EXPECT_EQ(o.held(), wantOf(r));
  EXPECT_EQ(targetOf("/srv/current"), "/srv/web-2");  // verbatim, not beneath the root
}

TEST_F(LinkKind, AsRecordedIsUnchangedAndNotTouched) {
  expectAsRecordedIsUnchangedAndUntouched(current());
}

TEST_F(LinkKind, AsWantedWithNoRecordIsAdoptedUnchangedAndNotTouched) {
  std::filesystem::create_directories(at("/srv"));
  std::filesystem::create_symlink("/srv/web-2", at("/srv/current"));
  const auto before = tree();
  const Outcome o = converge(current());
  EXPECT_EQ(o.verdict(), Verdict::Unchanged);
  EXPECT_EQ(o.reason(), "adopted");
  EXPECT_EQ(tree(), before);
}

TEST_F(LinkKind, RepointedIsUpdatedForDrift) {
  const auto& r = current();
  const auto rec = applied(r);
  std::filesystem::remove(at("/srv/current"));
  std::filesystem::create_symlink("/tmp/elsewhere", at("/srv/current"));
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "drift: points to /tmp/elsewhere");
  EXPECT_EQ(o.held(), wantOf(r));
  EXPECT_EQ(targetOf("/srv/current"), "/srv/web-2");
}

TEST_F(LinkKind, ANewTargetDeclaredIsUpdatedAsDeclared) {
  const auto rec = applied(current());
  const auto& next = current("/srv/web-3");
  const Outcome o = converge(next, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "declared");
  EXPECT_EQ(o.held(), wantOf(next));
  EXPECT_EQ(targetOf("/srv/current"), "/srv/web-3");
}

TEST_F(LinkKind, PlanDecidesTheSameAndChangesNothing) {
  const auto& r = current();
  Outcome o = converge(r, nullptr, Mode::Plan);
  EXPECT_EQ(o.verdict(), Verdict::Created);
  EXPECT_EQ(o.held(), wantOf(r));
  EXPECT_FALSE(stampOf("/srv/current"));

  const auto rec = applied(r);
  std::filesystem::remove(at("/srv/current"));
  std::filesystem::create_symlink("/tmp/elsewhere", at("/srv/current"));
  const auto before = tree();
  o = converge(r, &rec, Mode::Plan);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "drift: points to /tmp/elsewhere");
  EXPECT_EQ(tree(), before);
}

TEST_F(LinkKind, ADirectoryInTheWayFailsAndIsLeftInPlace) {
  const auto rec = applied(current());
  std::filesystem::remove(at("/srv/current"));
  std::filesystem::create_directories(at("/srv/current"));
  write("/srv/current/keep", "mine\n");
  const auto before = tree();
  const Outcome o = converge(current(), &rec);
  EXPECT_EQ(o.verdict(), Verdict::Failed);
  EXPECT_EQ(o.reason(),
            "a directory is in the way at /srv/current; remove it or declare another path");
  EXPECT_TRUE(o.held().is(rec.wrote));
  EXPECT_EQ(tree(), before);
}

}  // namespace
}  // namespace mesh::apply::test
