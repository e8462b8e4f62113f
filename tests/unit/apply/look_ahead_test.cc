// The cycle's files looked at ahead (apply/look_ahead.hh): what is taken, how
// far ahead, and that nothing taken is handed out once the cycle has acted.
#include "apply/look_ahead.hh"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "../../support/temp_dir.hh"
#include "apply/context.hh"

namespace mesh::apply {
namespace {

namespace fs = std::filesystem;

decl::Resource fileAt(const std::string& path, int n) {
  decl::Resource r;
  r.id = "m.f" + std::to_string(n);
  r.kind = decl::Kind::File;
  decl::FileSpec s;
  s.path = path;
  r.spec = s;
  return r;
}

decl::Resource directoryAt(const std::string& path) {
  decl::Resource r;
  r.id = "m.dir";
  r.kind = decl::Kind::Directory;
  decl::DirectorySpec s;
  s.path = path;
  r.spec = s;
  return r;
}

Fingerprint lstatOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return Fingerprint::of(st);
}

// Waits (yielding, bounded) until `done` holds: the look-ahead is a thread of
// its own, and these are the states it reaches.
bool eventually(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

class LookAheadTest : public ::testing::Test {
 protected:
  // `n` files /d<i % 3>/f<i> under the root, each holding its number.
  std::vector<decl::Resource> files(int n) {
    std::vector<decl::Resource> out;
    for (int i = 0; i < n; ++i) {
      const std::string dir = "/d" + std::to_string(i % 3);
      fs::create_directories(tmp.path + dir);
      const std::string path = dir + "/f" + std::to_string(i);
      std::ofstream(tmp.path + path) << i;
      out.push_back(fileAt(path, i));
    }
    return out;
  }

  test::TempDir tmp{"mesh-look-ahead"};
};

TEST_F(LookAheadTest, TakesEachFileAsAnLstatBeneathTheRootWouldSeeIt) {
  auto resources = files(300);
  // Not looked at: a directory's kind, a file not there, a file whose parent is
  // a link (its target holds one of that name: following would find it).
  resources.push_back(directoryAt("/d0"));
  resources.push_back(fileAt("/d1/missing", 1000));
  fs::create_directories(tmp.path + "/real");
  std::ofstream(tmp.path + "/real/f") << "x";
  fs::create_directory_symlink(tmp.path + "/real", tmp.path + "/linked");
  resources.push_back(fileAt("/linked/f", 1001));
  resources.push_back(fileAt("/no/parent", 1002));

  Beneath root(tmp.path, "");
  LookAhead ahead(root, resources);
  const size_t looksAt = resources.size() - 1;  // all but the directory
  ASSERT_TRUE(eventually([&] { return ahead.looked() == looksAt; })) << ahead.looked();

  for (int i = 0; i < 300; ++i) {
    const auto fp = ahead.take(resources[i]);
    ASSERT_TRUE(fp) << i;
    EXPECT_EQ(*fp, lstatOf(tmp.path + resources[i].path())) << i;
  }
  for (size_t i = 300; i < resources.size(); ++i)
    EXPECT_FALSE(ahead.take(resources[i])) << resources[i].path();
  // A resource that is not one of the cycle's: nothing.
  const auto copy = resources[5];
  EXPECT_FALSE(ahead.take(copy));
}

TEST_F(LookAheadTest, GoesNoFurtherThanItsWindowAheadOfTheCycle) {
  const int extra = 50;
  auto resources = files(static_cast<int>(LookAhead::kWindow) + extra);
  Beneath root(tmp.path, "");
  LookAhead ahead(root, resources);
  ASSERT_TRUE(eventually([&] { return ahead.looked() >= LookAhead::kWindow; }));
  EXPECT_EQ(ahead.looked(), LookAhead::kWindow);  // the cycle is still at 0
  EXPECT_TRUE(ahead.take(resources[0]));
  // The cycle at `extra`: the window reaches the end.
  EXPECT_TRUE(ahead.take(resources[extra]));
  ASSERT_TRUE(eventually([&] { return ahead.looked() == resources.size(); })) << ahead.looked();
  EXPECT_TRUE(ahead.take(resources.back()));
}

TEST_F(LookAheadTest, EndsWhileWaitingForTheCycle) {
  auto resources = files(static_cast<int>(LookAhead::kWindow) + 10);
  Beneath root(tmp.path, "");
  auto ahead = std::make_unique<LookAhead>(root, resources);
  ASSERT_TRUE(eventually([&] { return ahead->looked() == LookAhead::kWindow; }));
  ahead.reset();  // joins a thread waiting for room: must not hang
}

using ContextLookAhead = LookAheadTest;

TEST_F(ContextLookAhead, NothingTakenIsHandedOutOnceTheCycleHasActed) {
  const auto resources = files(static_cast<int>(LookAhead::kFewest));
  Settings s;
  s.root = tmp.path;
  Context ctx(s);
  const auto lookedAtAll = [&] {
    return ctx.lookingAhead() && ctx.lookingAhead()->looked() == resources.size();
  };
  ctx.lookAhead(resources);
  const auto& last = resources.back();
  ASSERT_TRUE(eventually(lookedAtAll));
  EXPECT_TRUE(ctx.lookedAhead(last));
  bool acted = false;
  ctx.changeOwingNothing([&] { acted = true; });
  ASSERT_TRUE(acted);
  EXPECT_FALSE(ctx.lookingAhead());
  EXPECT_FALSE(ctx.lookedAhead(last));
  ctx.lookAhead(resources);  // the next cycle looks ahead again
  ASSERT_TRUE(eventually(lookedAtAll));
  EXPECT_TRUE(ctx.lookedAhead(last));
}

TEST_F(ContextLookAhead, FewFilesAreNotWorthAThread) {
  const auto resources = files(static_cast<int>(LookAhead::kFewest) - 1);
  Settings s;
  s.root = tmp.path;
  Context ctx(s);
  ctx.lookAhead(resources);
  EXPECT_FALSE(ctx.lookingAhead());
  for (const auto& r : resources) EXPECT_FALSE(ctx.lookedAhead(r)) << r.path();
}

TEST_F(ContextLookAhead, APlanThatCountsSomethingRemovedLooksInTurn) {
  const auto resources = files(static_cast<int>(LookAhead::kFewest));
  Settings s;
  s.root = tmp.path;
  s.plan = true;
  Context ctx(s);
  ctx.lookAhead(resources);
  ASSERT_TRUE(eventually(
      [&] { return ctx.lookingAhead() && ctx.lookingAhead()->looked() == resources.size(); }));
  const auto& last = resources.back();
  EXPECT_TRUE(ctx.lookedAhead(resources[resources.size() - 2]));
  ctx.planRemoved(resources[0].path());
  EXPECT_FALSE(ctx.lookedAhead(last));
}

}  // namespace
}  // namespace mesh::apply
