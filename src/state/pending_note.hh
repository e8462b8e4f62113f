// What the agent's last cycle that only planned would change: <stateDir>/pending,
// written after each such cycle (paused, or `run --noop`), removed after a cycle
// that applied and when the agent stops. `status` and the metrics show it: drift
// and pushed changes waiting, never recorded as applied.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mesh::state {

struct PendingChange {
  std::string id;
  std::string outcome;  // what apply would report: created, updated, removed …
  std::string reason;
  bool operator==(const PendingChange&) const = default;
};

struct PendingNote {
  int64_t at = 0;      // unix ms the planning cycle finished
  std::string why;     // "paused" or "noop"
  int64_t pid = 0;     // the agent that wrote it (noted by notePending)
  int64_t failed = 0;  // resources the plan found would fail
  std::vector<PendingChange> changes;
};

// Never throws: the agent works whether or not `status` can read about it.
void notePending(const std::string& stateDir, const PendingNote& n) noexcept;
std::optional<PendingNote> pendingNote(const std::string& stateDir);
void clearPendingNote(const std::string& stateDir) noexcept;

}  // namespace mesh::state
