// Rows of the cycles and history tables (store/cycles.cc): one cycle, and one
// outcome that was not `unchanged` kept in the bounded history.
#pragma once

#include <cstdint>
#include <string>

#include "util/tally.hh"

namespace mesh::state {

struct Cycle {
  int64_t cycle = 0;
  int64_t startedAt = 0;   // unix ms
  int64_t finishedAt = 0;  // unix ms, 0 while running (or crashed)
  int64_t generation = 0;
  Tally tally;
  int64_t ms = 0;
};

struct HistoryEntry {
  int64_t cycle = 0;
  std::string id;
  std::string outcome;
  std::string reason;
  std::string want;
  std::string wrote;
  int64_t at = 0;  // unix ms
};

}  // namespace mesh::state
