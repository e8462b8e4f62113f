// An orderly stop is not a crash. When the agent is asked to stop (SIGTERM, SIGINT)
// in the middle of a cycle, the cycle ends after the resource in hand and its row
// stays unfinished (it has not seen everything: the next cycle completes it). This
// note, <stateDir>/cycle-stopped.page, says which cycle was stopped, by what and
// when, so that `status` does not call it killed or crashed. The agent writes it
// under the state lock once such a cycle ends (agent/locked_run.cc); a later cycle
// that finishes empties it (Store::finishCycle). Only a note naming the very cycle
// that is unfinished counts: a cycle killed after it is still a kill. A page
// written in place (state/note_page.hh), so it holds on a full state directory too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mesh::state {

struct CycleStop {
  int64_t cycle = 0;
  std::string signal;  // "SIGTERM", "SIGINT"; "" when not stopped by a signal
  int64_t at = 0;      // unix ms the agent was asked to stop
};

// Never throws: failing to note the stop leaves it shown as a kill, the safe side.
void noteCycleStopped(const std::string& stateDir, const CycleStop& stop) noexcept;
// Makes the page while there is room (a read-write open of the store does).
void prepareStopPage(const std::string& stateDir) noexcept;
std::optional<CycleStop> cycleStopped(const std::string& stateDir);
void clearCycleStopped(const std::string& stateDir) noexcept;

}  // namespace mesh::state
