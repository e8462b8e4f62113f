// Durability of many files at once, and of nothing else: an fsync of each
// descriptor, issued together from a few threads so the device sees them as one
// queue rather than one after the other.
//
// Why not syncfs, which costs one call: it writes out every dirty page of the
// file system, other programs' too. Beside a neighbour holding 2 GiB of unwritten
// data a one-file update took 0.6-0.8 s with syncfs and ~4 ms with an fsync of
// the file and of its directory (bench/sync_strategies.cc), and the neighbour's
// data was forced out with ours. Why not io_uring: its fsyncs run on the kernel's
// own worker threads and measured no faster than these (docs/performance.md), for
// a new dependency and a syscall that container seccomp profiles refuse.
//
// fsync, not fdatasync: a staged file's owner and mode are part of what it must
// be after a crash, and an fdatasync may leave them behind; for a file just
// written the two cost the same (the inode is written either way).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace mesh {

// At most this many fsyncs in flight.
inline constexpr size_t kSyncThreads = 16;

// fsync(fds[i]) for every i, together; the result's [i] is 0 or the errno of
// fds[i]'s fsync. A few descriptors are synced on the calling thread.
std::vector<int> syncMany(std::span<const int> fds);

// The same for `n` items, where sync(i) opens what item i names, fsyncs it and
// returns 0 or an errno: for callers that do not keep a descriptor per item.
template <class SyncOne>
std::vector<int> syncManyWith(size_t n, SyncOne sync);

namespace detail {
void runTogether(size_t n, void (*job)(void*, size_t), void* ctx);
}

template <class SyncOne>
std::vector<int> syncManyWith(size_t n, SyncOne sync) {
  struct Ctx {
    SyncOne* sync;
    std::vector<int> out;
  } ctx{&sync, std::vector<int>(n, 0)};
  detail::runTogether(
      n,
      [](void* c, size_t i) {
        auto* x = static_cast<Ctx*>(c);
        x->out[i] = (*x->sync)(i);
      },
      &ctx);
  return std::move(ctx.out);
}

}  // namespace mesh
