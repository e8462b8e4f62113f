#include "util/sync_many.hh"

#include <unistd.h>

#include <cerrno>
#include <thread>
#include <utility>

namespace mesh {
SyncQueue::~SyncQueue() {
  {
    std::unique_lock lock(m_);
    while (threads_.empty() && !todo_.empty()) syncOne(lock);
    stop_ = true;
  }
  todoCv_.notify_all();
  for (auto& t : threads_) t.join();
}

size_t SyncQueue::add(Fd fd) {
  std::unique_lock lock(m_);
  while (open_ >= maxOpen_ && threads_.empty() && !todo_.empty()) syncOne(lock);  // no thread
  roomCv_.wait(lock, [&] { return open_ < maxOpen_; });
  const size_t i = fds_.size();
  fds_.push_back(std::move(fd));
  results_.push_back(0);
  todo_.push_back(i);
  ++unfinished_;
  ++open_;
  // Threads only once there is something to overlap: one file synced alone costs
  // no thread at all (wait() syncs it).
  constexpr size_t kInline = 2;
  if (todo_.size() > kInline && threads_.size() < kSyncThreads) {
    try {
      threads_.emplace_back([this] { work(); });
    } catch (const std::system_error&) {  // none to be had: the ones there are, or wait()
    }
  }
  lock.unlock();
  todoCv_.notify_one();
  return i;
}

void SyncQueue::syncOne(std::unique_lock<std::mutex>& lock) {
  const size_t i = todo_.front();
  todo_.pop_front();
  const int fd = fds_[i].get();  // stays open: only this call closes it
  lock.unlock();
  const int err = ::fsync(fd) == 0 ? 0 : errno;
  lock.lock();
  results_[i] = err;
  fds_[i].reset();
  --open_;
  --unfinished_;
  roomCv_.notify_one();
  doneCv_.notify_all();
}

void SyncQueue::work() {
  std::unique_lock lock(m_);
  for (;;) {
    todoCv_.wait(lock, [&] { return stop_ || !todo_.empty(); });
    if (todo_.empty()) return;  // stopping, nothing left
    syncOne(lock);
  }
}

std::vector<int> SyncQueue::wait() {
  std::unique_lock lock(m_);
  while (!todo_.empty()) syncOne(lock);  // this thread helps with what is left
  doneCv_.wait(lock, [&] { return unfinished_ == 0; });
  fds_.clear();
  return std::exchange(results_, {});
}

}  // namespace mesh
