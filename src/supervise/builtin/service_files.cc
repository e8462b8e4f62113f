#include "supervise/builtin/service_files.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "util/digest.hh"
#include "util/error.hh"
#include "util/fd.hh"
#include "util/fs.hh"
#include "util/state_layout.hh"
#include "util/text_safe.hh"

namespace mesh::supervise::builtin {

ServicePaths ServicePaths::of(const std::string& stateDir, const std::string& runtimeDir,
                              const std::string& name) {
  return inDirs(layout::under(stateDir, layout::kServices) + "/" + name, runtimeDir + "/" + name,
                layout::under(stateDir, layout::kServiceLogs) + "/" + name + ".log");
}

ServicePaths ServicePaths::inDirs(const std::string& dir, const std::string& runDir,
                                  const std::string& log) {
  return {dir,
          dir + "/unit",
          runDir,
          runDir + "/status",
          runDir + "/supervisor.lock",
          runDir + "/control.sock",
          runDir + "/output",
          log};
}

std::string defaultRuntimeDir(const std::string& stateDir) {
  if (const char* env = std::getenv("MESH_HOST_RUNTIME_DIR"); env && env[0] == '/') return env;
  std::string normal = std::filesystem::path(stateDir).lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  // The default state directory, under any --root: its sibling <root>/run.
  constexpr std::string_view kDefaultStateDir = "/var/lib/mesh-host";
  if (normal.ends_with(kDefaultStateDir))
    return normal.substr(0, normal.size() - kDefaultStateDir.size()) + "/run/mesh-host";
  const std::string hex = Digest::ofBytes(normal).hex().substr(0, 32);
  if (::geteuid() == 0) return "/run/mesh-host/" + hex;
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && xdg[0] == '/')
    return std::string(xdg) + "/mesh-host/" + hex;
  return fmt::format("/tmp/mesh-host-{}/{}", ::geteuid(), hex);
}

bool isRegularFile(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void linkStatusIntoServiceDir(const ServicePaths& p) {
  if (p.isLegacy()) return;
  const std::string link = p.dir + "/status";
  struct stat st {};
  if (::lstat(p.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
  if (::lstat(link.c_str(), &st) == 0) {
    if (!S_ISLNK(st.st_mode)) return;
    char target[4096];
    ssize_t n = ::readlink(link.c_str(), target, sizeof target);
    if (n > 0 && std::string_view(target, static_cast<size_t>(n)) == p.status) return;
  }
  try {
    atomicSymlink(link, p.status);
  } catch (const std::exception&) {
    // A convenience only: the runtime directory holds the record.
  }
}

void validateServiceName(const std::string& name) {
  if (name.empty() || name.size() > 200 || name[0] == '.' ||
      name.find_first_of("/\n\0 ", 0, 4) != std::string::npos)
    throw Error("\"{}\" cannot be a service name: use a plain name like demo.service", name);
}

std::string Status::render() const {
  nlohmann::json j = {{"version", 1},
                      {"supervisor_pid", supervisorPid},
                      {"pid", pid},
                      {"start_ticks", startTicks},
                      {"state", state},
                      {"since_us", sinceUs},
                      {"crash_restarts", crashRestarts},
                      {"last_exit", lastExit},
                      {"unit_digest", unitDigest}};
  if (!statusText.empty()) j["status_text"] = statusText;
  if (!note.empty()) j["note"] = note;
  return jsonData(j) + "\n";
}

std::optional<Status> Status::parse(std::string_view text) {
  try {
    auto j = nlohmann::json::parse(text);
    Status s;
    s.supervisorPid = j.at("supervisor_pid").get<pid_t>();
    s.pid = j.at("pid").get<pid_t>();
    s.startTicks = j.at("start_ticks").get<uint64_t>();
    s.state = j.at("state").get<std::string>();
    s.sinceUs = j.at("since_us").get<int64_t>();
    s.crashRestarts = j.at("crash_restarts").get<int64_t>();
    s.lastExit = j.value("last_exit", "");
    s.unitDigest = j.value("unit_digest", "");
    s.statusText = j.value("status_text", "");
    s.note = j.value("note", "");
    return s;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

std::optional<Status> readStatus(const std::string& path) {
  auto text = readFile(path);
  if (!text) return std::nullopt;
  return Status::parse(*text);
}

void writeStatus(const std::string& path, const Status& s) {
  atomicWrite(path, s.render(), 0644);
}

std::optional<uint64_t> processStartTicks(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  std::optional<std::string> stat;
  try {
    stat = readFile("/proc/" + std::to_string(pid) + "/stat");
  } catch (const SysError&) {
    return std::nullopt;  // ESRCH while reading: it just exited
  }
  if (!stat) return std::nullopt;
  // "pid (comm) S ppid …": comm may hold anything, so count fields after the last ')'.
  auto close = stat->rfind(')');
  if (close == std::string::npos || close + 2 >= stat->size()) return std::nullopt;
  char state = (*stat)[close + 2];
  if (state == 'Z' || state == 'X') return std::nullopt;
  size_t pos = close + 2;
  for (int field = 3; field < 22; ++field) {  // starttime is field 22
    pos = stat->find(' ', pos);
    if (pos == std::string::npos) return std::nullopt;
    ++pos;
  }
  return std::strtoull(stat->c_str() + pos, nullptr, 10);
}

bool processIsIdle(pid_t pid) {
  if (pid <= 0) return false;
  const std::string dir = "/proc/" + std::to_string(pid);
  try {
    auto stat = readFile(dir + "/stat");
    if (!stat) return false;
    auto close = stat->rfind(')');  // "pid (comm) S …": comm may hold anything
    if (close == std::string::npos || close + 2 >= stat->size() || (*stat)[close + 2] != 'S')
      return false;
    // Children of its main thread (CONFIG_PROC_CHILDREN; missing: cannot tell).
    auto children = readFile(dir + "/task/" + std::to_string(pid) + "/children");
    return children && children->find_first_not_of(" \n") == std::string::npos;
  } catch (const SysError&) {
    return false;  // ESRCH while reading: it just exited
  }
}

bool processIsAlive(pid_t pid, uint64_t startTicks) {
  auto ticks = processStartTicks(pid);
  return ticks && *ticks == startTicks;
}

namespace {

// Whether someone holds a lock on [start, start + len) (len 0: to the end):
// the type of the lock found, F_UNLCK for none.
short lockedRange(int fd, off_t start, off_t len, const std::string& lockPath) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = start;
  fl.l_len = len;
  if (::fcntl(fd, F_OFD_GETLK, &fl) != 0) throwSys(fmt::format("cannot test {}", lockPath));
  return fl.l_type;
}

std::string sibling(const std::string& path, std::string_view name) {
  auto slash = path.rfind('/');
  return (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) +
         std::string(name);
}

// The lock file of the supervisors of older mesh-hosts, beside ours: 0644, so
// anyone who may enter the directory can open it and take a read lock there.
// Supervisors only ever take write locks, so only a write lock counts.
LockState oldLockState(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return {};  // none (or not ours to open: then no supervisor of ours)
  LockState s;
  s.held = lockedRange(fd.get(), 0, 0, path) == F_WRLCK;
  // A whole-file lock (the oldest supervisors') covers the byte after it too:
  // that is no sign of a stale status.
  s.stale = s.held && lockedRange(fd.get(), kStaleByte, 1, path) == F_WRLCK &&
            lockedRange(fd.get(), kStaleByte + 1, 1, path) == F_UNLCK;
  return s;
}

// For a reader who may not open the lock (an operator in the state directory's
// group): the supervisor named in the status file, alive. Whether its status is
// behind cannot be told from here.
LockState lockStateFromStatus(const std::string& statusPath) {
  std::optional<Status> st;
  try {
    st = readStatus(statusPath);
  } catch (const std::exception&) {
    return {};
  }
  LockState s;
  s.held = st && st->supervisorPid > 0 && processStartTicks(st->supervisorPid).has_value();
  return s;
}

}  // namespace

LockState supervisorLockState(const std::string& lockPath) {
  // 0600, in a directory only root (or the supervisor's user) may write: nobody
  // else can open it, so any lock on it is a supervisor's.
  Fd fd(::open(lockPath.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  LockState s;
  if (fd) {
    s.held = lockedRange(fd.get(), 0, 0, lockPath) != F_UNLCK;
    s.stale = s.held && lockedRange(fd.get(), kStaleByte, 1, lockPath) != F_UNLCK;
  } else if (errno == EACCES || errno == EPERM) {
    s = lockStateFromStatus(sibling(lockPath, "status"));
  } else if (errno != ENOENT && errno != ENOTDIR) {
    throwSys(fmt::format("cannot open {}", lockPath));
  }
  if (s.held) return s;
  return oldLockState(sibling(lockPath, "lock"));
}

std::string oldSupervisorLock(const std::string& lockPath) {
  return sibling(lockPath, "lock");
}

bool supervisorHoldsLock(const std::string& lockPath) {
  return supervisorLockState(lockPath).held;
}

static int64_t clockUs(clockid_t clock) {
  struct timespec ts {};
  ::clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}

int64_t realtimeUs() {
  return clockUs(CLOCK_REALTIME);
}
int64_t monotonicUs() {
  return clockUs(CLOCK_MONOTONIC);
}

std::string Reply::render() const {
  switch (kind) {
    case Kind::Ok:
      return fmt::format("ok {} {}\n", pid, detail);
    case Kind::Busy:
      return "busy\n";
    case Kind::Fail:
      break;
  }
  std::string oneLine = detail;
  for (char& c : oneLine)
    if (c == '\n') c = ' ';
  return "fail " + oneLine + "\n";
}

Reply Reply::parse(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line == "busy") return {Kind::Busy, 0, ""};
  if (line.substr(0, 5) == "fail ") return fail(std::string(line.substr(5)));
  if (line.substr(0, 3) == "ok ") {
    std::string rest(line.substr(3));
    char* end = nullptr;
    long pid = std::strtol(rest.c_str(), &end, 10);
    if (end != rest.c_str()) {
      std::string how = *end == ' ' ? std::string(end + 1) : std::string();
      return ok(static_cast<pid_t>(pid), how);
    }
  }
  return fail(fmt::format("unexpected answer from the supervisor: \"{}\"", line));
}

}  // namespace mesh::supervise::builtin
