#include "agent/agent_lock.hh"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string>

#include "state/state_dir.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::agent {

namespace {

// The pid in a note ("<pid>\n") when that process still lives. EPERM: it lives,
// as another user (a reader asking about root's agent).
std::optional<pid_t> livePid(const std::string& text) {
  pid_t pid = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
  if (ec != std::errc() || pid <= 0) return std::nullopt;
  if (::kill(pid, 0) != 0 && errno != EPERM) return std::nullopt;
  return pid;
}

}  // namespace

std::optional<AgentLock> AgentLock::tryAcquire(const std::string& stateDir,
                                               std::optional<pid_t>* holder) {
  const state::StateDir dir{stateDir};
  makeDirs(stateDir, 0750);
  // <state-dir>/locks: 0700, so nobody but the state directory's owner can open
  // the lock, let alone hold it (an older agent.lock was 0644: any reader could
  // flock it and keep every agent from starting).
  const std::string locks = dir.locks();
  if (::mkdir(locks.c_str(), 0700) != 0 && errno != EEXIST)
    throwSys(fmt::format("cannot make {}", locks));
  if (auto st = lstatPath(locks); !st || !S_ISDIR(st->st_mode) || st->st_uid != ::geteuid())
    throw Error("refusing {}: not a directory of uid {} running mesh-host", locks, ::geteuid());
  const std::string path = dir.agentLock();
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) throwSys(fmt::format("cannot open {}", path));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) throwSys(fmt::format("cannot lock {}", path));
    if (auto text = readFile(dir.agentPid())) *holder = livePid(*text);
    return std::nullopt;
  }
  // The old lock file, which others could lock: nothing takes it any more.
  (void)::unlink(layout::under(stateDir, layout::kOldAgentLock).c_str());
  // For the message above and for readers (`status`): failing to write it must
  // not fail the agent. 0640 in the state directory's group, as state.db: its
  // readers (docs/operating.md) read it, others (a service user that may traverse
  // the state directory) do not.
  try {
    Ownership owner;
    if (auto st = lstatPath(stateDir)) owner.gid = st->st_gid;
    atomicWrite(dir.agentPid(), std::to_string(::getpid()) + "\n", 0640, owner);
  } catch (const std::exception&) {
  }
  return AgentLock(std::move(fd), dir.agentPid());
}

AgentLock::~AgentLock() {
  if (!fd_ || notePath_.empty()) return;
  // Ours still (not a later agent's): removed, so that no reader takes a pid
  // reused since for the agent.
  if (auto text = readFile(notePath_); text && livePid(*text) == ::getpid())
    (void)::unlink(notePath_.c_str());
}

std::optional<pid_t> agentPid(const std::string& stateDir) {
  try {
    if (auto text = readFile(state::StateDir{stateDir}.agentPid())) return livePid(*text);
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace mesh::agent
