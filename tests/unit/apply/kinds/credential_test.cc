// `credential` on its own (kinds/credential.cc, content_file.cc): observe and
// decide on a real temp tree, through the fixture that stands in for the cycle
// (kind_fixture.hh). The secret comes from a local `from` file; its digest is keyed
// with the node key, which the first apply makes in the state directory.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kind_fixture.hh"
#include "util/digest.hh"

namespace mesh::apply::test {
namespace {

constexpr const char* kSecret = "hunter2-do-not-print\n";

class CredentialKind : public KindTest {
 protected:
  void SetUp() override {
    KindTest::SetUp();
    setSecret(kSecret);
  }
  void setSecret(const std::string& bytes) const {
    std::ofstream(work + "/secret", std::ios::binary | std::ios::trunc) << bytes;
  }
  const decl::Resource& key() {
    return declare("[module.web.credential.key]\npath = \"/etc/web/key\"\nfrom = \"secret\"\n");
  }
  // The secret's bytes appear nowhere in what a cycle reports or records.
  static void expectNoSecretIn(const Outcome& o, const std::string& secret) {
    const std::string plainDigest = Digest::ofBytes(secret).hex();
    for (const std::string* text : {&o.reason(), &o.detail(), &o.diff, &o.observed}) {
      EXPECT_EQ(text->find(secret.substr(0, 7)), std::string::npos) << *text;
      EXPECT_EQ(text->find(plainDigest), std::string::npos) << *text;
    }
  }
};

TEST_F(CredentialKind, AbsentIsCreatedMode0600HoldingTheSecret) {
  const auto& r = key();
  const Outcome o = converge(r);
  EXPECT_EQ(o.verdict(), Verdict::Created);
  EXPECT_EQ(o.reason(), "new");
  EXPECT_EQ(o.detail(), "secret, mode 0600");
  EXPECT_EQ(o.held(), wantOf(r));
  EXPECT_EQ(read("/etc/web/key"), kSecret);
  EXPECT_EQ(stampOf("/etc/web/key")->mode & 07777, 0600u);
  expectNoSecretIn(o, kSecret);
}

TEST_F(CredentialKind, AsRecordedIsUnchangedAndNotWritten) {
  expectAsRecordedIsUnchangedAndUntouched(key());
}

TEST_F(CredentialKind, AsWantedWithNoRecordIsAdoptedUnchangedAndNotWritten) {
  const auto& r = key();
  applied(r);
  const auto before = tree();
  const Outcome o = converge(r);  // the record lost
  EXPECT_EQ(o.verdict(), Verdict::Unchanged);
  EXPECT_EQ(o.reason(), "adopted");
  EXPECT_EQ(tree(), before);
}

TEST_F(CredentialKind, ContentEditedIsUpdatedForDrift) {
  const auto& r = key();
  const auto rec = applied(r);
  write("/etc/web/key", "guessed\n");
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "drift: content changed");
  EXPECT_EQ(o.held(), wantOf(r));
  EXPECT_EQ(read("/etc/web/key"), kSecret);
}

TEST_F(CredentialKind, ModeChangedIsUpdatedForDrift) {
  const auto& r = key();
  const auto rec = applied(r);
  ::chmod(at("/etc/web/key").c_str(), 0644);
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "drift: mode 0644, want 0600");
  EXPECT_EQ(stampOf("/etc/web/key")->mode & 07777, 0600u);
}

TEST_F(CredentialKind, OwnerChangedIsUpdatedForDrift) {
  const auto& r = declare(
      "[module.web.credential.key]\npath = \"/etc/web/key\"\nfrom = \"secret\"\n"
      "owner = \"root\"\n");
  const auto rec = applied(r);
  ASSERT_EQ(::lchown(at("/etc/web/key").c_str(), 1234, 1234), 0);
  const Outcome o = converge(r, &rec);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "drift: owner 1234, want root (0)");
  EXPECT_EQ(stampOf("/etc/web/key")->uid, 0u);
}

TEST_F(CredentialKind, PlanOfANewSecretDecidesTheSameRedactsItAndWritesNothing) {
  const auto& r = key();
  const auto rec = applied(r);
  const std::string next = "correct-horse-battery\n";
  setSecret(next);
  const auto before = tree();
  const Outcome o = converge(r, &rec, Mode::Plan);
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "declared");
  EXPECT_EQ(o.diff, "(secret changed)\n");
  EXPECT_EQ(o.held(), wantOf(r));  // the node key exists: the plan's digest is the apply's
  expectNoSecretIn(o, next);
  expectNoSecretIn(o, kSecret);
  EXPECT_EQ(tree(), before);
  EXPECT_EQ(read("/etc/web/key"), kSecret);
}

TEST_F(CredentialKind, AMissingSourceFailsAndLeavesTheCredentialThatWasThere) {
  const auto rec = applied(key());
  std::filesystem::remove(work + "/secret");
  const auto before = tree();
  const Outcome o = converge(key(), &rec);
  EXPECT_EQ(o.verdict(), Verdict::Failed);
  EXPECT_EQ(o.reason(), "credential source " + work + "/secret does not exist");
  EXPECT_TRUE(o.held().is(rec.wrote));
  EXPECT_EQ(tree(), before);
  EXPECT_EQ(read("/etc/web/key"), kSecret);
}

}  // namespace
}  // namespace mesh::apply::test
