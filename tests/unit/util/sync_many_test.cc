// util/sync_many: an fsync of each descriptor handed over, each one's result in its place.
#include "util/sync_many.hh"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../../support/temp_dir.hh"
#include "util/open_files.hh"

namespace mesh {
namespace {

// How many threads this process runs.
size_t threads() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// One file synced alone costs no thread (wait() syncs it on the caller's); many
// get up to kSyncThreads, and they stay for the queue's life.
TEST(SyncQueue, AFewAreSyncedOnTheCallingThreadAndManyOnAFewMore) {
  const size_t before = threads();
  SyncQueue q;
  q.add(Fd(-1));
  q.add(Fd(-1));
  EXPECT_EQ(threads(), before) << "a thread for two syncs";
  EXPECT_EQ(q.wait(), (std::vector<int>{EBADF, EBADF}));
  for (int i = 0; i < 100; ++i) q.add(Fd(-1));
  const size_t during = threads();
  EXPECT_GT(during, before);
  EXPECT_LE(during, before + kSyncThreads);
  EXPECT_EQ(q.wait(), std::vector<int>(100, EBADF));
}

// A batch's queue: files handed over as they are written, more than may stay
// open at once; each result where its add() said, a bad one failing alone.
TEST(SyncQueue, ResultsComeInTheOrderOfAddAndTheQueueNeverHoldsMoreThanItsBound) {
  test::TempDir tmp;
  SyncQueue q(4);
  std::vector<size_t> at;
  for (int i = 0; i < 50; ++i) {
    if (i == 23) {
      at.push_back(q.add(Fd(-1)));  // not a descriptor
      continue;
    }
    const std::string path = tmp.path + "/f" + std::to_string(i);
    Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    ASSERT_TRUE(fd);
    ASSERT_EQ(::write(fd.get(), "x", 1), 1);
    at.push_back(q.add(std::move(fd)));
  }
  const auto got = q.wait();
  ASSERT_EQ(got.size(), 50u);
  for (size_t i = 0; i < at.size(); ++i) {
    EXPECT_EQ(at[i], i);
    EXPECT_EQ(got[i], i == 23 ? EBADF : 0) << i;
  }
  // Afresh after a wait: indices from 0, and one alone synced at wait().
  EXPECT_EQ(q.add(Fd(-1)), 0u);
  EXPECT_EQ(q.wait(), std::vector<int>{EBADF});
  EXPECT_TRUE(q.wait().empty());
}

}  // namespace
}  // namespace mesh

namespace mesh {
namespace {

// util/open_files.hh: a share of the process's own limit, within its bounds.
TEST(OpenFilesShare, IsThePartOfTheLimitWithinItsBounds) {
  struct rlimit rl {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &rl), 0);
  const size_t limit = rl.rlim_cur == RLIM_INFINITY ? 1024 : rl.rlim_cur;
  EXPECT_EQ(openFilesShare(1024, 4), std::clamp<size_t>(limit / 4, 8, 1024));
  EXPECT_EQ(openFilesShare(1u << 30, 1), limit);
  EXPECT_EQ(openFilesShare(4, 1), 8u);  // never fewer than 8
  EXPECT_EQ(openFilesShare(64, limit * 2), 8u);
}

}  // namespace
}  // namespace mesh
