// `directory` on its own (kinds/directory.cc): observe and decide on a real temp
// tree, through the fixture that stands in for the cycle (kind_fixture.hh).
#include <unistd.h>

#include "kind_fixture.hh"

namespace mesh::apply::test {
namespace {

class DirectoryKind : public KindTest {
 protected:
  const decl::Resource& data(const std::string& owner = "root") {
    return declare("[module.web.directory.data]\npath = \"/srv/web\"\nmode = \"0750\"\nowner = \"" +
                   owner + "\"\n");
  }
};

TEST_F(DirectoryKind, AbsentIsCreatedWithItsMode) {
  const auto& r = data();
  const Outcome o = converge(r);
  EXPECT_EQ(o.verdict(), Verdict::Created);
  EXPECT_EQ(o.reason(), "new");
  EXPECT_EQ(o.detail(), "mode 0750");
  EXPECT_EQ(o.held(), wantOf(r));
  ASSERT_TRUE(stampOf("/srv/web"));
  EXPECT_TRUE(S_ISDIR(stampOf("/srv/web")->mode));
  EXPECT_EQ(stampOf("/srv/web")->mode & 07777, 0750u);
}

TEST_F(DirectoryKind, AsRecordedIsUnchangedAndNotTouched) {
  expectAsRecordedIsUnchangedAndUntouched(data());
}

TEST_F(DirectoryKind, AsWantedWithNoRecordIsAdoptedUnchangedAndNotTouched) {
  ASSERT_EQ(::mkdir(at("/srv").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(at("/srv/web").c_str(), 0750), 0);
  ::chmod(at("/srv/web").c_str(), 0750);  // whatever the umask
  const auto before = tree();
  const Outcome o = converge(data());
  EXPECT_EQ(o.verdict(), Verdict::Unchanged);
  EXPECT_EQ(o.reason(), "adopted");
  EXPECT_EQ(tree(), before);
}

TEST_F(DirectoryKind, ModeChangedIsUpdatedForDriftInPlace) {
  const auto& r = data();
  const auto rec = applied(r);
  const ino_t ino = stampOf("/srv/web")->ino;
  ::chmod(at("/srv/web").c_str(), 0777);
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "drift: mode 0777, want 0750");
  EXPECT_EQ(o.held(), wantOf(r));
  EXPECT_EQ(stampOf("/srv/web")->mode & 07777, 0750u);
  EXPECT_EQ(stampOf("/srv/web")->ino, ino);  // the same directory: its content is not managed
}

TEST_F(DirectoryKind, OwnerChangedIsUpdatedForDrift) {
  const auto& r = data();
  const auto rec = applied(r);
  ASSERT_EQ(::lchown(at("/srv/web").c_str(), 1234, 1234), 0);
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "drift: owner 1234, want root (0)");
  EXPECT_EQ(stampOf("/srv/web")->uid, 0u);
}

TEST_F(DirectoryKind, PlanDecidesTheSameAndChangesNothing) {
  const auto& r = data();
  Outcome o = converge(r, nullptr, Mode::Plan);
  EXPECT_EQ(o.verdict(), Verdict::Created);
  EXPECT_EQ(o.held(), wantOf(r, Mode::Plan));
  EXPECT_FALSE(stampOf("/srv/web"));

  const auto rec = applied(r);
  ::chmod(at("/srv/web").c_str(), 0777);
  const auto before = tree();
  o = converge(r, &rec, Mode::Plan);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "drift: mode 0777, want 0750");
  EXPECT_EQ(tree(), before);
}

TEST_F(DirectoryKind, AFileInTheWayFailsAndIsLeftInPlace) {
  write("/srv/web", "not a directory\n");
  const auto before = tree();
  const Outcome o = converge(data());
  EXPECT_EQ(o.verdict(), Verdict::Failed);
  EXPECT_EQ(o.reason(), "a file is in the way at /srv/web; remove it or declare another path");
  EXPECT_EQ(o.held(), Digest::none());  // no record: nothing of it is held
  EXPECT_EQ(tree(), before);
}

TEST_F(DirectoryKind, AFailureLeavesTheDirectoryThatWasThereAndHoldsWhatWasWritten) {
  const auto rec = applied(data());
  ::chmod(at("/srv/web").c_str(), 0777);
  const auto before = tree();
  const Outcome o = converge(data("no-such-user-mesh"), &rec);
  EXPECT_EQ(o.verdict(), Verdict::Failed);
  EXPECT_NE(o.reason().find("no-such-user-mesh"), std::string::npos) << o.reason();
  EXPECT_TRUE(o.held().is(rec.wrote));
  EXPECT_EQ(tree(), before);  // its mode was not put right either: nothing was done
}

}  // namespace
}  // namespace mesh::apply::test
