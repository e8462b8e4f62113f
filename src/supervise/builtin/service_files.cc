#include "supervise/builtin/service_files.hh"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <nlohmann/json.hpp>

#include "util/error.hh"
#include "util/fd.hh"
#include "util/fs.hh"

namespace mesh::supervise::builtin {

ServicePaths ServicePaths::of(const std::string& stateDir, const std::string& name) {
  return inDir(stateDir + "/services/" + name, stateDir + "/log/" + name + ".log");
}

ServicePaths ServicePaths::inDir(const std::string& dir, const std::string& log) {
  return {
      dir, dir + "/unit", dir + "/status", dir + "/lock", dir + "/control.sock", dir + "/output",
      log};
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
  return j.dump() + "\n";
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

bool processIsAlive(pid_t pid, uint64_t startTicks) {
  auto ticks = processStartTicks(pid);
  return ticks && *ticks == startTicks;
}

bool supervisorHoldsLock(const std::string& lockPath) {
  Fd fd(::open(lockPath.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return false;
    throwSys(fmt::format("cannot open {}", lockPath));
  }
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (::fcntl(fd.get(), F_OFD_GETLK, &fl) != 0) throwSys(fmt::format("cannot test {}", lockPath));
  return fl.l_type != F_UNLCK;
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
