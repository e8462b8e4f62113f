#include "agent/agent_lock.hh"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>
#include <charconv>
#include <string>

#include "state/state_dir.hh"
#include "util/error.hh"

namespace mesh::agent {

std::optional<AgentLock> AgentLock::tryAcquire(const std::string& stateDir,
                                               std::optional<pid_t>* holder) {
  const std::string path = state::StateDir{stateDir}.agentLock();
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd) throwSys(fmt::format("cannot open {}", path));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) throwSys(fmt::format("cannot lock {}", path));
    char buf[32];
    ssize_t n = ::pread(fd.get(), buf, sizeof buf, 0);
    pid_t pid = 0;
    if (n > 0) {
      auto [end, ec] = std::from_chars(buf, buf + n, pid);
      if (ec == std::errc() && pid > 0) *holder = pid;
    }
    return std::nullopt;
  }
  // Only for the message above: failing to write it must not fail the agent.
  const std::string text = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) != 0 || ::pwrite(fd.get(), text.data(), text.size(), 0) < 0) {
  }
  return AgentLock(std::move(fd));
}

}  // namespace mesh::agent
