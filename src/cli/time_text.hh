// Times as the CLI prints them: UTC, ISO 8601, to the second.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>

namespace mesh::cli {

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

}  // namespace mesh::cli
