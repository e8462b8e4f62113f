// `archive` on its own (kinds/archive.cc, tree.cc): observe and decide on a real
// temp tree, through the fixture that stands in for the cycle (kind_fixture.hh).
// Bundles are tars made by the real tar, put in the blob directory by digest.
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "apply/kinds/tree.hh"

#include "kind_fixture.hh"

namespace mesh::apply::test {
namespace {

class ArchiveKind : public KindTest {
 protected:
  void SetUp() override {
    KindTest::SetUp();
    v1 = publishTar({{"index.html", "<h1>v1</h1>\n"}, {"css/site.css", "body {}\n"}});
    v2 = publishTar({{"index.html", "<h1>v2</h1>\n"}, {"css/site.css", "body {}\n"}});
  }
  const decl::Resource& site(const std::string& bundle, const std::string& extra = "") {
    return declare("[module.web.archive.site]\npath = \"/srv/site\"\nbundle = \"" + bundle +
                   "\"\n" + extra);
  }
  std::string v1, v2;
};

TEST_F(ArchiveKind, AbsentIsUnpackedAtItsPath) {
  const auto& r = site(v1);
  const Outcome o = converge(r);
  EXPECT_EQ(o.verdict(), Verdict::Created);
  EXPECT_EQ(o.reason(), "new");
  EXPECT_EQ(o.detail(), "2 file(s) from " + Digest::parse(v1)->shortStr());
  EXPECT_EQ(o.held(), wantOf(r));
  EXPECT_EQ(read("/srv/site/index.html"), "<h1>v1</h1>\n");
  EXPECT_EQ(read("/srv/site/css/site.css"), "body {}\n");
}

TEST_F(ArchiveKind, AsRecordedIsUnchangedAndNoFileTouched) {
  expectAsRecordedIsUnchangedAndUntouched(site(v1));
}

TEST_F(ArchiveKind, TheBundlesTreeWithNoRecordIsAdoptedUnchangedAndNotTouched) {
  const auto& r = site(v1);
  applied(r);
  const auto before = tree();
  const Outcome o = converge(r);  // the record lost: the tree is checked file by file
  EXPECT_EQ(o.verdict(), Verdict::Unchanged);
  EXPECT_EQ(o.reason(), "adopted");
  EXPECT_EQ(tree(), before);
}

// A record an earlier version wrote (fingerprints by path, the manifest as one
// string: read with a second copy of its text) is trusted as it was, and written
// again in the current form; nothing on disk is touched.
TEST_F(ArchiveKind, ARecordOfTheFormBeforeIsUnchangedAndWrittenAgainInTheCurrentOne) {
  const auto& r = site(v1);
  auto rec = applied(r);
  const auto now = TreeObserved::parse(rec.observed);
  ASSERT_TRUE(now.manifest);
  EXPECT_FALSE(now.legacy);
  nlohmann::json before;
  before["manifest"] = now.manifest->str();
  before["fingerprints"] = nlohmann::json::array();
  for (const auto& [index, f] : now.cache.fingerprints)
    before["fingerprints"].push_back({now.manifest->entries[index].path, f.str()});
  rec.observed = before.dump();
  const auto untouched = tree();
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Unchanged);
  EXPECT_EQ(o.reason(), "");
  EXPECT_FALSE(o.observedAsRecorded);
  const auto again = TreeObserved::parse(o.observed);
  ASSERT_TRUE(again.manifest);
  EXPECT_FALSE(again.legacy);
  EXPECT_EQ(again.manifest->entries, now.manifest->entries);
  EXPECT_EQ(tree(), untouched);
}

TEST_F(ArchiveKind, AFileEditedInsideIsUpdatedForDrift) {
  const auto& r = site(v1);
  const auto rec = applied(r);
  write("/srv/site/index.html", "<h1>defaced</h1>\n");
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason().rfind("drift: ", 0), 0u) << o.reason();
  EXPECT_NE(o.reason().find("index.html"), std::string::npos) << o.reason();
  EXPECT_EQ(o.held(), wantOf(r));
  EXPECT_EQ(read("/srv/site/index.html"), "<h1>v1</h1>\n");
}

TEST_F(ArchiveKind, AFileAddedInsideIsUpdatedForDrift) {
  const auto& r = site(v1);
  const auto rec = applied(r);
  write("/srv/site/extra.html", "planted\n");
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_NE(o.reason().find("extra.html"), std::string::npos) << o.reason();
  EXPECT_FALSE(stampOf("/srv/site/extra.html"));
}

TEST_F(ArchiveKind, ModeChangedInsideIsUpdatedForDrift) {
  const auto& r = site(v1);
  const auto rec = applied(r);
  const mode_t mode = stampOf("/srv/site/index.html")->mode & 07777;
  ::chmod(at("/srv/site/index.html").c_str(), 0600);
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason().rfind("drift: ", 0), 0u) << o.reason();
  EXPECT_EQ(stampOf("/srv/site/index.html")->mode & 07777, mode);
}

TEST_F(ArchiveKind, ANewBundleDeclaredIsSwitchedInAsDeclared) {
  const auto rec = applied(site(v1));
  const auto& next = site(v2);
  const Outcome o = converge(next, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "declared");
  EXPECT_EQ(o.held(), wantOf(next));
  EXPECT_EQ(read("/srv/site/index.html"), "<h1>v2</h1>\n");
}

TEST_F(ArchiveKind, PlanDecidesTheSameAndChangesNothing) {
  Outcome o = converge(site(v1), nullptr, Mode::Plan);
  EXPECT_EQ(o.verdict(), Verdict::Created);
  EXPECT_EQ(o.detail(), "2 file(s) from " + Digest::parse(v1)->shortStr());
  EXPECT_FALSE(stampOf("/srv/site"));

  const auto rec = applied(site(v1));
  const auto before = tree();
  o = converge(site(v2), &rec, Mode::Plan);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "declared");
  EXPECT_EQ(o.held(), wantOf(site(v2)));
  EXPECT_EQ(tree(), before);
}

TEST_F(ArchiveKind, ADamagedBundleFailsAndLeavesTheTreeThatWasThere) {
  const auto rec = applied(site(v1));
  const std::string damaged = publish("this is not a tar archive\n");
  const auto before = tree();
  const Outcome o = converge(site(damaged), &rec);
  EXPECT_EQ(o.verdict(), Verdict::Failed);
  EXPECT_TRUE(o.held().is(rec.wrote)) << o.reason();
  EXPECT_EQ(tree(), before);  // not half-unpacked, nothing left beside it
}

TEST_F(ArchiveKind, FilesItDidNotWriteFailItUnlessReplaceIsDeclared) {
  write("/srv/site/index.html", "<h1>someone's</h1>\n");
  write("/srv/site/notes.txt", "mine\n");
  const auto before = tree();
  Outcome o = converge(site(v1));
  EXPECT_EQ(o.verdict(), Verdict::Failed);
  EXPECT_NE(o.reason().find("notes.txt"), std::string::npos) << o.reason();
  EXPECT_NE(o.reason().find("replace = true"), std::string::npos) << o.reason();
  EXPECT_EQ(tree(), before);

  o = converge(site(v1, "replace = true\n"));
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "adopted");
  EXPECT_FALSE(stampOf("/srv/site/notes.txt"));
  EXPECT_EQ(read("/srv/site/index.html"), "<h1>v1</h1>\n");
}

}  // namespace
}  // namespace mesh::apply::test
