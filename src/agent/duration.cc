#include "agent/duration.hh"

#include <charconv>
#include <cstdint>

#include "util/error.hh"

namespace mesh::agent {

namespace {

struct Unit {
  std::string_view suffix;
  int64_t ms;
};

// Longest suffixes first, so "ms" is not read as "m" followed by junk.
constexpr Unit kUnits[] = {{"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"", 1000}};

}  // namespace

Millis parseDuration(std::string_view text, const std::string& option) {
  const auto bad = [&] {
    return InputError("{} {}: not a duration; write e.g. 500ms, 30s, 5m, 1h or plain seconds",
                      option, text);
  };
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data() || value < 0) throw bad();
  const std::string_view suffix(end, text.data() + text.size() - end);
  for (const auto& u : kUnits) {
    if (suffix != u.suffix) continue;
    if (value > INT64_MAX / u.ms) throw bad();
    return Millis(value * u.ms);
  }
  throw bad();
}

std::string formatDuration(Millis d) {
  const int64_t ms = d.count();
  if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace mesh::agent
