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

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "util/fd.hh"

namespace mesh {

// At most this many fsyncs in flight.
inline constexpr size_t kSyncThreads = 16;

// fsyncs handed over one at a time and run at once, on up to kSyncThreads
// threads, while the caller goes on writing: a batch's files are synced while
// the next ones are written, and the wait at its commit is for the last few.
//   add()   takes a descriptor of a file just written; its fsync starts soon
//           (at once on another thread once a few are waiting; with fewer, on
//           the calling thread at wait()); closed once synced. At most
//           `maxOpen` are open and waiting: add() blocks for room beyond.
//   wait()  returns once every fsync handed over is done: each one's 0 or
//           errno, in the order of add(), and starts afresh.
class SyncQueue {
 public:
  explicit SyncQueue(size_t maxOpen = 256) : maxOpen_(maxOpen) {}
  ~SyncQueue();  // syncs what was handed over, then ends its threads
  SyncQueue(const SyncQueue&) = delete;
  SyncQueue& operator=(const SyncQueue&) = delete;

  // The index of this fsync's result in wait()'s.
  size_t add(Fd fd);
  std::vector<int> wait();

 private:
  void work();
  void syncOne(std::unique_lock<std::mutex>& lock);  // pops one; lock held around, not during

  const size_t maxOpen_;
  std::mutex m_;
  std::condition_variable todoCv_, doneCv_, roomCv_;
  std::deque<size_t> todo_;
  std::vector<Fd> fds_;
  std::vector<int> results_;
  size_t unfinished_ = 0, open_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace mesh
