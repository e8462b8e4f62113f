// Time spans, the one parser for the whole program: command-line options
// (--interval, --splay, --wait), unit keys checked at parse (RestartSec=, …)
// and the built-in supervisor reading a unit all accept the same text, systemd's
// (systemd.time(7)): "90", "500ms", "5m", "5min", "1min 30s", "1.5h", "2 days".
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace mesh {

inline constexpr int64_t kTimeSpanInfinity = std::numeric_limits<int64_t>::max();

// A sequence of <number><unit> (spaces allowed between and inside), summed; a
// bare number is seconds. Units: us usec µs, ms msec, s sec second(s), m min
// minute(s), h hr hour(s), d day(s), w week(s), M month(s) (30.44 d), y year(s)
// (365.25 d). "infinity" is kTimeSpanInfinity, as is anything beyond 10^17 µs.
// Microseconds, rounded; nullopt when malformed or negative.
[[nodiscard]] std::optional<int64_t> parseTimeSpanUs(std::string_view text);

}  // namespace mesh
