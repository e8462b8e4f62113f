// One agent per state dir: an flock on <state-dir>/agent.lock, held for the
// agent's life and released by the kernel however it ends (kill -9 included).
// It is separate from the state lock (<state-dir>/lock), which every cycle takes
// and releases, so `apply` and `status` still run beside an idle agent.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "util/fd.hh"

namespace mesh::agent {

class [[nodiscard]] AgentLock {
 public:
  // Non-blocking. nullopt when another agent holds it; then `*holder` is its pid
  // when known. Throws SysError when the file cannot be opened or locked.
  static std::optional<AgentLock> tryAcquire(const std::string& stateDir,
                                             std::optional<pid_t>* holder);

 private:
  explicit AgentLock(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;
};

}  // namespace mesh::agent
