// `mesh-host pause --reason TEXT`: while <stateDir>/paused exists, the agent's cycles
// only plan (nothing on the node changes; pushes are kept, drift is noted) and
// `apply` refuses unless --force. Durable (temp file + fsync + rename), so it
// outlives the agent; `mesh-host resume` removes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mesh::state {

struct Pause {
  std::string reason;
  int64_t uid = 0;
  std::string user;  // the uid's name ("root"), with the sudo user when there is one
  int64_t sinceMs = 0;
  bool operator==(const Pause&) const = default;
};

// The pause of the calling process's user, now.
Pause pauseByMe(std::string reason);

// Throws mesh::Error when it cannot be written.
void writePause(const std::string& stateDir, const Pause& p);
// nullopt: not paused. A file that does not decode still pauses, its reason saying so.
std::optional<Pause> readPause(const std::string& stateDir);
// Whether there was a pause to remove. Throws mesh::Error when it cannot be removed.
bool removePause(const std::string& stateDir);

// "paused by root (uid 0) since 2026-12-02T07:20:00Z: decommissioning".
std::string pauseText(const Pause& p);

}  // namespace mesh::state
