#include "state/drift_note.hh"

#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "state/state_dir.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/text_safe.hh"

namespace mesh::state {

namespace {

std::string notePath(const std::string& stateDir) {
  return StateDir{stateDir}.driftWatch();
}

}  // namespace

void noteDrift(const std::string& stateDir, const DriftNote& n) noexcept {
  try {
    if (!lstatPath(stateDir)) return;
    const nlohmann::json j = {{"at", n.at},
                              {"pid", n.pid ? n.pid : static_cast<int64_t>(::getpid())},
                              {"watched_dirs", n.watchedDirs},
                              {"unwatched", n.unwatched},
                              {"repairs", n.repairs},
                              {"backoff_ms", n.backoffMs}};
    atomicWrite(notePath(stateDir), jsonData(j) + "\n", 0640);
  } catch (...) {
  }
}

std::optional<DriftNote> driftNote(const std::string& stateDir) {
  std::optional<std::string> text;
  try {
    text = readFile(notePath(stateDir));
  } catch (const SysError&) {
    return std::nullopt;
  }
  if (!text) return std::nullopt;
  const auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  DriftNote n;
  n.at = j.value("at", int64_t{0});
  n.pid = j.value("pid", int64_t{0});
  n.watchedDirs = j.value("watched_dirs", int64_t{0});
  n.unwatched = j.value("unwatched", int64_t{0});
  n.repairs = j.value("repairs", int64_t{0});
  n.backoffMs = j.value("backoff_ms", int64_t{0});
  return n;
}

void clearDriftNote(const std::string& stateDir) noexcept {
  ::unlink(notePath(stateDir).c_str());
}

std::optional<AgentSeen> agentRunning(const std::string& stateDir, int64_t notedPid) {
  AgentSeen seen;
  struct stat st {};
  if (::lstat(StateDir{stateDir}.agentLock().c_str(), &st) != 0) {
    if (errno != EACCES) return seen;  // never ran here
    // A reader of the group cannot look into locks/ (0700): the pid the agent
    // names in agent.pid (removed when it stops), if that process lives.
    std::ifstream in(StateDir{stateDir}.agentPid());
    int64_t pid = 0;
    if (in >> pid && pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM)) {
      seen.running = true;
      seen.pid = pid;
    }
    return seen;
  }
  std::ifstream locks("/proc/locks");
  if (!locks) return std::nullopt;
  // "1: FLOCK  ADVISORY  WRITE 1234 08:02:131 0 EOF"; a waiter's line has "->"
  // after the number. The device is major:minor in hex, the inode in decimal.
  const std::string file = fmt::format("{:02x}:{:02x}:{}", major(st.st_dev), minor(st.st_dev),
                                       static_cast<unsigned long>(st.st_ino));
  // On a stacked file system (overlayfs) the lock is on the inode beneath, whose
  // device differs: the inode and the pid the note names then say it.
  const std::string inode = fmt::format(":{}", static_cast<unsigned long>(st.st_ino));
  std::string line;
  while (std::getline(locks, line)) {
    std::istringstream in(line);
    std::string number, type, advisory, access, at;
    int64_t pid = 0;
    if (!(in >> number >> type) || type == "->" || type != "FLOCK") continue;
    if (!(in >> advisory >> access >> pid >> at)) continue;
    const bool sameInode = at.size() > inode.size() && at.ends_with(inode);
    if (at != file && !(sameInode && notedPid > 0 && pid == notedPid)) continue;
    seen.running = true;
    seen.pid = pid;
    return seen;
  }
  return seen;
}

}  // namespace mesh::state
