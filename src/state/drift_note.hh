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
  // The agent that wrote it (noteDrift fills it in; 0 in a note from before). Last,
  // so that the writers' aggregate initialisers keep their meaning.
  int64_t pid = 0;
};

// Never throws: the watch works whether or not `status` can read about it.
void noteDrift(const std::string& stateDir, const DriftNote& n) noexcept;
std::optional<DriftNote> driftNote(const std::string& stateDir);
void clearDriftNote(const std::string& stateDir) noexcept;

// Whether an agent runs on this state directory now: something holds the flock
// of <stateDir>/locks/agent (held for the agent's life; a killed agent's goes
// with it). Read from /proc/locks, so it takes no lock and waits for none; nullopt
// when that cannot be read (no /proc). A reader who cannot see into locks/ goes by
// the live pid in <stateDir>/agent.pid instead. Its pid when it is known.
struct AgentSeen {
  bool running = false;
  int64_t pid = 0;  // as /proc/locks shows it (0 unknown)
};
// `notedPid`: the pid a note of the agent names (0 none).
std::optional<AgentSeen> agentRunning(const std::string& stateDir, int64_t notedPid = 0);

}  // namespace mesh::state
