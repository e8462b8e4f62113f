// util/sync_many: an fsync of each descriptor, each one's result in its place.
#include "util/sync_many.hh"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "../../support/temp_dir.hh"

namespace mesh {
namespace {

TEST(SyncMany, EveryDescriptorIsSyncedAndABadOneFailsAlone) {
  test::TempDir tmp;
  std::vector<int> fds;
  for (int i = 0; i < 40; ++i) {
    const std::string path = tmp.path + "/f" + std::to_string(i);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "x", 1), 1);
    fds.push_back(fd);
  }
  fds.insert(fds.begin() + 17, -1);  // not a descriptor
  const auto got = syncMany(fds);
  ASSERT_EQ(got.size(), fds.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], i == 17 ? EBADF : 0) << i;
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
}

TEST(SyncMany, ManyRunTogetherAndAFewOnTheCallingThread) {
  const auto self = std::this_thread::get_id();
  std::mutex m;
  std::condition_variable cv;
  // The first two syncs wait for each other: they meet only if they run at once.
  auto run = [&](size_t n) {
    std::set<std::thread::id> seen;
    int arrived = 0;
    bool met = true;
    const auto out = syncManyWith(n, [&](size_t i) {
      std::unique_lock lock(m);
      seen.insert(std::this_thread::get_id());
      if (n > 2 && i < 2) {
        ++arrived;
        cv.notify_all();
        met = cv.wait_for(lock, std::chrono::seconds(10), [&] { return arrived == 2; }) && met;
      }
      return static_cast<int>(i);
    });
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(out[i], static_cast<int>(i));
    return std::pair{seen, met};
  };
  auto [few, fewMet] = run(2);
  EXPECT_EQ(few, std::set<std::thread::id>{self});
  EXPECT_TRUE(fewMet);
  auto [many, manyMet] = run(64);
  EXPECT_TRUE(manyMet) << "two syncs of 64 never ran at once";
  EXPECT_GE(many.size(), 2u);
  EXPECT_LE(many.size(), kSyncThreads);
  EXPECT_TRUE(syncManyWith(0, [](size_t) { return 1; }).empty());
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
