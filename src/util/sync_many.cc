#include "util/sync_many.hh"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <thread>

namespace mesh {
namespace detail {

void runTogether(size_t n, void (*job)(void*, size_t), void* ctx) {
  // Below this an fsync each on this thread is as quick: nothing to overlap.
  constexpr size_t kInline = 2;
  if (n <= kInline) {
    for (size_t i = 0; i < n; ++i) job(ctx, i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) job(ctx, i);
  };
  std::vector<std::thread> pool;
  const size_t threads = std::min(n, kSyncThreads) - 1;  // this thread is one
  pool.reserve(threads);
  try {
    for (size_t t = 0; t < threads; ++t) pool.emplace_back(work);
  } catch (const std::system_error&) {  // no thread to be had: fewer, or this one alone
  }
  work();
  for (auto& t : pool) t.join();
}

}  // namespace detail

std::vector<int> syncMany(std::span<const int> fds) {
  return syncManyWith(fds.size(), [&](size_t i) { return ::fsync(fds[i]) == 0 ? 0 : errno; });
}

}  // namespace mesh
