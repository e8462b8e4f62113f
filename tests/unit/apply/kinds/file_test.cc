// `file` on its own (kinds/file.cc, content_file.cc): observe and decide on a real
// temp tree, through the fixture that stands in for the cycle (kind_fixture.hh).
#include <errno.h>
#include <unistd.h>

#include "kind_fixture.hh"
#include "util/faults.hh"

namespace mesh::apply::test {
namespace {

class FileKind : public KindTest {
 protected:
  const decl::Resource& config(const std::string& content = "listen = 1\\n",
                               const std::string& extra = "") {
    return declare(
        "[module.web.file.config]\npath = \"/etc/web/config.toml\"\nmode = \"0644\"\n"
        "owner = \"root\"\ncontent = \"" +
        content + "\"\n" + extra);
  }
};

TEST_F(FileKind, AbsentIsCreatedWithItsContentAndMode) {
  const auto& r = config();
  const Outcome o = converge(r);
  EXPECT_EQ(o.verdict(), Verdict::Created);
  EXPECT_EQ(o.reason(), "new");
  EXPECT_EQ(o.detail(), "11 bytes, mode 0644");
  EXPECT_EQ(o.held(), wantOf(r));
  EXPECT_EQ(read("/etc/web/config.toml"), "listen = 1\n");
  EXPECT_EQ(stampOf("/etc/web/config.toml")->mode & 07777, 0644u);
  EXPECT_FALSE(o.observed.empty());  // the fingerprint the next cycle's fast path reads
}

TEST_F(FileKind, AsRecordedIsUnchangedAndNotWritten) {
  expectAsRecordedIsUnchangedAndUntouched(config());
}

TEST_F(FileKind, AsWantedWithNoRecordIsAdoptedUnchangedAndNotWritten) {
  write("/etc/web/config.toml", "listen = 1\n");
  ::chmod(at("/etc/web/config.toml").c_str(), 0644);
  const auto before = tree();
  const Outcome o = converge(config());
  EXPECT_EQ(o.verdict(), Verdict::Unchanged);
  EXPECT_EQ(o.reason(), "adopted");
  EXPECT_EQ(o.held(), wantOf(config()));
  EXPECT_EQ(tree(), before);
}

TEST_F(FileKind, ContentEditedIsUpdatedForDrift) {
  const auto& r = config();
  const auto rec = applied(r);
  write("/etc/web/config.toml", "listen = 9\n");
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "drift: content changed");
  EXPECT_EQ(o.held(), wantOf(r));
  EXPECT_EQ(read("/etc/web/config.toml"), "listen = 1\n");
}

TEST_F(FileKind, ModeChangedIsUpdatedForDrift) {
  const auto& r = config();
  const auto rec = applied(r);
  ::chmod(at("/etc/web/config.toml").c_str(), 0600);
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "drift: mode 0600, want 0644");
  EXPECT_EQ(stampOf("/etc/web/config.toml")->mode & 07777, 0644u);
}

TEST_F(FileKind, OwnerChangedIsUpdatedForDrift) {
  const auto& r = config();
  const auto rec = applied(r);
  ASSERT_EQ(::lchown(at("/etc/web/config.toml").c_str(), 1234, 1234), 0);
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "drift: owner 1234, want root (0)");
  EXPECT_EQ(stampOf("/etc/web/config.toml")->uid, 0u);
}

TEST_F(FileKind, NewContentDeclaredIsUpdatedAsDeclared) {
  const auto rec = applied(config());
  const auto& next = config("listen = 2\\n");
  const Outcome o = converge(next, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "declared");
  EXPECT_EQ(o.held(), wantOf(next));
  EXPECT_EQ(read("/etc/web/config.toml"), "listen = 2\n");
}

TEST_F(FileKind, PlanOfAnAbsentFileDecidesCreatedAndWritesNothing) {
  const auto before = tree();
  const Outcome o = converge(config(), nullptr, Mode::Plan);
  EXPECT_EQ(o.verdict(), Verdict::Created);
  EXPECT_EQ(o.held(), wantOf(config()));
  EXPECT_EQ(o.diff, "--- /dev/null\n+++ b/etc/web/config.toml\n@@ -0,0 +1 @@\n+listen = 1\n");
  EXPECT_EQ(tree(), before);
}

TEST_F(FileKind, PlanOfAnEditedFileDecidesDriftShowsTheDiffAndWritesNothing) {
  const auto& r = config();
  const auto rec = applied(r);
  write("/etc/web/config.toml", "listen = 9\n");
  const auto before = tree();
  const Outcome o = converge(r, &rec, Mode::Plan);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "drift: content changed");
  EXPECT_EQ(o.diff,
            "--- a/etc/web/config.toml\n+++ b/etc/web/config.toml\n@@ -1 +1 @@\n"
            "-listen = 9\n+listen = 1\n");
  EXPECT_EQ(tree(), before);
  EXPECT_EQ(read("/etc/web/config.toml"), "listen = 9\n");
}

int noSpace(const char*) {
  return ENOSPC;
}

TEST_F(FileKind, AFailedWriteLeavesTheFileThatWasThereAndHoldsWhatWasWritten) {
  const auto rec = applied(config());
  const auto before = stampOf("/etc/web/config.toml");
  // The declared tree only: the state directory beneath the root may gain the
  // original kept before the write (apply/originals.hh), which is not the point.
  auto declaredPaths = [this] {
    std::vector<std::string> out;
    for (const auto& p : pathsOf(tree()))
      if (p.starts_with("/etc")) out.push_back(p);
    return out;
  };
  const auto paths = declaredPaths();
  setWriteFaultHook(noSpace);
  const Outcome o = converge(config("listen = 2\\n"), &rec);
  setWriteFaultHook(nullptr);
  EXPECT_EQ(o.verdict(), Verdict::Failed);
  EXPECT_NE(o.reason().find("No space left on device"), std::string::npos) << o.reason();
  EXPECT_TRUE(o.held().is(rec.wrote));  // what the machine still holds
  EXPECT_EQ(read("/etc/web/config.toml"), "listen = 1\n");
  EXPECT_EQ(stampOf("/etc/web/config.toml"), before);
  EXPECT_EQ(declaredPaths(), paths);  // no temp file left beside it
}

}  // namespace
}  // namespace mesh::apply::test
