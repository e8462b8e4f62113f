// The wall clock, read one way: the current time in unix milliseconds, as every time
// mesh-host stores, publishes or prints is kept (records, statuses, heartbeats, log lines).
// What is judged by a time takes it as an argument (fleet/view.hh), so that a test can
// pass its own; only the outermost caller reads the clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace mesh {

inline int64_t unixNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace mesh
