// When the agent runs its next cycle: the pure part of the loop, kept apart from
// clocks and file descriptors so it tests on plain values.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace mesh::agent {

using Clock = std::chrono::steady_clock;

// The next periodic cycle: `interval` after the end of the last one, plus a
// splay in [0, splay] taken from `randomBits` (uniform enough for spreading a
// fleet; the modulo bias is negligible for 64 random bits). Counting from the
// end means a long cycle never makes cycles pile up.
Clock::time_point nextPeriodicCycle(Clock::time_point lastFinished,
                                    std::chrono::milliseconds interval,
                                    std::chrono::milliseconds splay, uint64_t randomBits);

// One save of a file is several inotify events (write, close, rename, and an
// editor's backup dance): the change counts once the file has been quiet for
// `quiet`.
class Debounce {
 public:
  explicit Debounce(std::chrono::milliseconds quiet) : quiet_(quiet) {}

  // An event at `now`: (re)starts the quiet period.
  void poke(Clock::time_point now) { deadline_ = now + quiet_; }
  // Whether the quiet period has passed; clears it when it has, so that one
  // burst of events reports true exactly once.
  bool take(Clock::time_point now) {
    if (!deadline_ || now < *deadline_) return false;
    deadline_.reset();
    return true;
  }
  std::optional<Clock::time_point> deadline() const { return deadline_; }
  void clear() { deadline_.reset(); }

 private:
  std::chrono::milliseconds quiet_;
  std::optional<Clock::time_point> deadline_;
};

// The milliseconds to wait until the earliest of `deadlines` (those set), for
// epoll_wait: -1 (forever) when none is set, 0 when one has passed. Rounded up
// so a wake-up never comes a millisecond early and spins.
int waitMillis(Clock::time_point now,
               std::initializer_list<std::optional<Clock::time_point>> deadlines);

}  // namespace mesh::agent
