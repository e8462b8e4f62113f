#include "util/duration.hh"

#include <cstdint>

#include "util/error.hh"
#include "util/timespan.hh"

namespace mesh {

Millis parseDuration(std::string_view text, const std::string& option) {
  const auto us = parseTimeSpanUs(text);
  if (!us || *us == kTimeSpanInfinity)
    throw InputError(
        "{} {}: not a duration; write e.g. 500ms, 30s, 5m, 5min, 1h 30min or plain seconds", option,
        text);
  return Millis((*us + 999) / 1000);  // a fraction of a millisecond is one more
}

std::string formatDuration(Millis d) {
  const int64_t ms = d.count();
  if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace mesh
