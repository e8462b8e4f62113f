// A credential that holds a cycle in the middle deterministically (header-only,
// included by relative path): a FIFO whose first reader is blocked in its read until
// the test releases it, then handed the secret; every later reader gets it at once.
#pragma once

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace mesh::test {

class FifoFeeder {
 public:
  // Writes `secret` to each reader of the FIFO at `path` (a credential is read more
  // than once in a cycle).
  //
  // The writer opens the FIFO only once a reader has it open; that reader may close
  // it before the write (killed while held, or done with an earlier copy still
  // open). The write then fails with EPIPE: SIGPIPE is blocked in this thread alone,
  // so it never ends the test, and nothing the test starts inherits an ignored
  // SIGPIPE (a disposition set with signal() would pass through exec).
  explicit FifoFeeder(std::string path, std::string secret = "s3cret")
      : thread_([this, path = std::move(path), secret = std::move(secret)] {
          sigset_t pipe;
          sigemptyset(&pipe);
          sigaddset(&pipe, SIGPIPE);
          ::pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
          while (!stop_.load()) {
            const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
            if (fd < 0) {
              std::this_thread::sleep_for(std::chrono::milliseconds(5));  // no reader yet
              continue;
            }
            held_.store(true);
            while (!release_.load() && !stop_.load())
              std::this_thread::sleep_for(std::chrono::milliseconds(5));
            (void)!::write(fd, secret.data(), secret.size());
            ::close(fd);
            ++writes_;
            // A SIGPIPE raised by that write stays pending in this thread, blocked;
            // take it so the next write's is not merged with it.
            const timespec none{};
            while (::sigtimedwait(&pipe, nullptr, &none) == SIGPIPE) {
            }
          }
        }) {}
  ~FifoFeeder() {
    stop_.store(true);
    thread_.join();
  }
  FifoFeeder(const FifoFeeder&) = delete;
  FifoFeeder& operator=(const FifoFeeder&) = delete;

  // Until a reader is blocked in its read (at most `timeout`).
  bool awaitHeld(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!held_.load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return held_.load();
  }
  // Lets the held reader (and every later one) through.
  void release() { release_.store(true); }
  // Until the feeder has written (or tried to) `n` times since it began.
  bool awaitWrites(int n, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (writes_.load() < n && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return writes_.load() >= n;
  }

 private:
  std::atomic<bool> stop_{false}, held_{false}, release_{false};
  std::atomic<int> writes_{0};
  std::thread thread_;
};

}  // namespace mesh::test
