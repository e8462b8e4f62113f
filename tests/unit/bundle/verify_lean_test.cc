// verifyLean(): what verify() finds, holding the fingerprints once when they are the
// trusted ones (an archive's no-op), and giving verify()'s `fresh` otherwise.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "bundle/unpack.hh"
#include "test_util.hh"
#include "util/fs.hh"

namespace mesh::bundle {
namespace {

using test::Crafted;

class VerifyLean : public ::testing::Test {
 protected:
  void SetUp() override {
    archive = tmp.path + "/b.tar";
    dest = tmp.path + "/dest";
    test::craftTar(archive, {{Crafted::File, "a", "one", 0644},
                             {Crafted::File, "d/b", "two", 0644},
                             {Crafted::File, "d/c", "three", 0644}});
    m = test::unpackTo(archive, dest, {});
    tree = test::openDir(dest);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // fingerprints trusted
    auto first = verify(tree.get(), m);
    ASSERT_EQ(first.difference, std::nullopt);
    trusted = first.fresh;
    ASSERT_EQ(trusted.fingerprints.size(), 3u);
  }

  test::TempDir tmp;
  std::string archive, dest;
  Manifest m;
  Fd tree;
  VerifyCache trusted;
};

TEST_F(VerifyLean, NoOpLeavesFreshEmptyAndSaysItIsTheTrustedOnes) {
  auto v = verifyLean(tree.get(), m, trusted);
  EXPECT_EQ(v.difference, std::nullopt);
  EXPECT_TRUE(v.freshIsTrusted);
  EXPECT_TRUE(v.fresh.fingerprints.empty());
}

TEST_F(VerifyLean, ARewrittenFileGivesWhatVerifyGives) {
  test::writeText(dest + "/d/b", "two", 0644);  // the same content, a new fingerprint
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  auto lean = verifyLean(tree.get(), m, trusted);
  auto full = verify(tree.get(), m, &trusted);
  EXPECT_EQ(lean.difference, std::nullopt);
  EXPECT_FALSE(lean.freshIsTrusted);
  EXPECT_EQ(lean.fresh.fingerprints, full.fresh.fingerprints);
  EXPECT_NE(lean.fresh.fingerprints, trusted.fingerprints);
}

TEST_F(VerifyLean, AFingerprintMissingFromTheTrustedOnesIsAdded) {
  VerifyCache fewer = trusted;
  fewer.fingerprints.pop_back();
  auto lean = verifyLean(tree.get(), m, fewer);
  EXPECT_FALSE(lean.freshIsTrusted);
  EXPECT_EQ(lean.fresh.fingerprints, trusted.fingerprints);
}

TEST_F(VerifyLean, ADifferenceIsReportedAsVerifyReportsIt) {
  test::writeText(dest + "/a", "ONE", 0644);
  auto lean = verifyLean(tree.get(), m, trusted);
  EXPECT_EQ(lean.difference, "changed: a");
  EXPECT_FALSE(lean.freshIsTrusted);
  EXPECT_TRUE(lean.fresh.fingerprints.empty());
}

}  // namespace
}  // namespace mesh::bundle
