// Durations on the command line (--interval, --splay, --wait): the program's one
// time-span parser (util/timespan.hh) — "500ms", "30s", "5m", "5min", "1h 30min",
// plain seconds — as milliseconds, with the option named in the error.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace mesh {

using Millis = std::chrono::milliseconds;

// Throws InputError naming `option` when `text` is not a duration.
[[nodiscard]] Millis parseDuration(std::string_view text, const std::string& option);

// The shortest exact rendering: 300000 ms → "5m", 1500 ms → "1500ms".
std::string formatDuration(Millis d);

}  // namespace mesh
