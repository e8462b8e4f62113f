// Times as mesh-host prints them: UTC, RFC 3339 to the second, and "5m ago".
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <string>

namespace mesh {

// Unix ms → "2024-05-01T12:00:00Z"; "" for 0 (never).
inline std::string isoTime(int64_t ms) {
  if (ms == 0) return "";
  std::time_t t = ms / 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// How long before `now` (both unix ms) `ms` was: "9s ago", "12m ago", "3h ago", "2d ago";
// "never" for 0.
inline std::string agoText(int64_t ms, int64_t now) {
  if (ms <= 0) return "never";
  const int64_t s = std::max<int64_t>(0, (now - ms) / 1000);
  if (s < 120) return fmt::format("{}s ago", s);
  if (s < 2 * 3600) return fmt::format("{}m ago", s / 60);
  if (s < 2 * 86400) return fmt::format("{}h ago", s / 3600);
  return fmt::format("{}d ago", s / 86400);
}

}  // namespace mesh
