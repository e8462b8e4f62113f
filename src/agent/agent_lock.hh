// One agent per state dir: an flock on <state-dir>/locks/agent (0600, in the
// 0700 directory of the state lock, so no other user can open it), held for the
// agent's life and released by the kernel however it ends (kill -9 included).
// It is separate from the state lock, which every cycle takes and releases, so
// `apply` and `status` still run beside an idle agent. The agent names itself in
// <state-dir>/agent.pid (0644) for a waiter and for readers; that file locks
// nothing.
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
  AgentLock(AgentLock&&) noexcept = default;
  AgentLock& operator=(AgentLock&&) noexcept = default;
  ~AgentLock();

 private:
  AgentLock(Fd fd, std::string notePath) : fd_(std::move(fd)), notePath_(std::move(notePath)) {}
  Fd fd_;
  std::string notePath_;  // <state-dir>/agent.pid
};

// The live agent of the state dir as it named itself in <state-dir>/agent.pid;
// nullopt when none runs. Takes no lock: any user who may read the state
// directory may ask.
std::optional<pid_t> agentPid(const std::string& stateDir);

}  // namespace mesh::agent
