// What the agent's drift watch (agent/drift_watch.hh) covers, for `status` and the
// metrics: <stateDir>/drift-watch, written by the agent after each cycle and removed
// when it stops.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mesh::state {

struct DriftNote {
  int64_t at = 0;           // unix ms it was written
  int64_t watchedDirs = 0;  // directories watched
  int64_t unwatched = 0;    // resources no watch covers: repaired at the interval only
  int64_t repairs = 0;      // cycles started by an event that repaired something, ever
  int64_t backoffMs = 0;    // > 0: an outside writer fights a repair; the next waits this long
};

// Never throws: the watch works whether or not `status` can read about it.
void noteDrift(const std::string& stateDir, const DriftNote& n) noexcept;
std::optional<DriftNote> driftNote(const std::string& stateDir);
void clearDriftNote(const std::string& stateDir) noexcept;

}  // namespace mesh::state
