#include "fleet/view/parallel.hh"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace mesh::fleet {

namespace {

// From this many nodes on, they are judged on several threads, kChunk nodes at a time.
constexpr size_t kParallelFrom = 256;
constexpr size_t kChunk = 32;

}  // namespace

void forEachNode(size_t n, const std::function<void(size_t)>& each) {
  // The threads take the next chunk of nodes as they finish one, so a thread that gets
  // less of a busy machine's CPU does less of the work rather than holding up the others.
  std::atomic<size_t> next{0};
  const auto judge = [&] {
    for (;;) {
      const size_t from = next.fetch_add(kChunk, std::memory_order_relaxed);
      if (from >= n) return;
      for (size_t i = from; i < std::min(from + kChunk, n); ++i) each(i);
    }
  };
  const size_t threads =
      n < kParallelFrom ? 1 : std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
  // What a judging thread throws is the view's to throw, after every thread ended.
  std::mutex failedMutex;
  std::exception_ptr failed;
  const auto judgeGuarded = [&] {
    try {
      judge();
    } catch (...) {
      std::lock_guard lock(failedMutex);
      if (!failed) failed = std::current_exception();
      next = n;
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(judgeGuarded);
  judgeGuarded();
  for (auto& th : pool) th.join();
  if (failed) std::rethrow_exception(failed);
}

}  // namespace mesh::fleet
