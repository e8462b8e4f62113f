#include "agent/schedule.hh"

#include <algorithm>
#include <climits>

namespace mesh::agent {

using std::chrono::milliseconds;

Clock::time_point nextPeriodicCycle(Clock::time_point lastFinished, milliseconds interval,
                                    milliseconds splay, uint64_t randomBits) {
  const auto span = static_cast<uint64_t>(std::max<int64_t>(splay.count(), 0));
  const auto extra = span == 0 ? 0 : randomBits % (span + 1);
  return lastFinished + interval + milliseconds(extra);
}

int waitMillis(Clock::time_point now,
               std::initializer_list<std::optional<Clock::time_point>> deadlines) {
  std::optional<Clock::time_point> earliest;
  for (const auto& d : deadlines)
    if (d && (!earliest || *d < *earliest)) earliest = d;
  if (!earliest) return -1;
  if (*earliest <= now) return 0;
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(*earliest - now).count();
  const int64_t ms = (us + 999) / 1000;
  return static_cast<int>(std::min<int64_t>(ms, INT_MAX));
}

}  // namespace mesh::agent
