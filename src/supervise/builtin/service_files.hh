// What the builtin backend and mesh-host-supervise share on disk: one directory
// per service holding `unit`, `status`, `lock`, `control.sock`, `output` (the
// FIFO the service writes to) and, for Type=notify, `notify.sock`, plus the
// readiness/reply lines they exchange.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mesh::supervise::builtin {

struct ServicePaths {
  std::string dir, unit, status, lock, socket, output, log;
  // <stateDir>/services/<name>/…, log at <stateDir>/log/<name>.log.
  static ServicePaths of(const std::string& stateDir, const std::string& name);
  static ServicePaths inDir(const std::string& dir, const std::string& log);
};

// Throws mesh::Error unless `name` can be a directory name ("demo.service").
void validateServiceName(const std::string& name);

// The supervisor's account of its service, written atomically at every
// transition. Read back by observe(), and by a new supervisor deciding to adopt.
struct Status {
  pid_t supervisorPid = 0;
  pid_t pid = 0;                   // the service's main pid, 0 when none
  uint64_t startTicks = 0;         // its /proc/<pid>/stat start time: guards pid reuse
  std::string state = "inactive";  // starting|active|stopping|backoff|inactive|failed
  // Realtime µs when the current child became active: when it started, or for
  // Type=notify when it sent READY=1 (0 until then) — systemd's
  // ActiveEnterTimestamp.
  int64_t sinceUs = 0;
  int64_t crashRestarts = 0;
  std::string lastExit;    // "exited with status 3", "killed by signal 9 (KILL)"
  std::string unitDigest;  // of the unit text the child runs with
  std::string statusText;  // the last STATUS= a Type=notify service sent

  std::string render() const;
  static std::optional<Status> parse(std::string_view json);  // nullopt when malformed
};

std::optional<Status> readStatus(const std::string& path);  // nullopt: none or unreadable
void writeStatus(const std::string& path, const Status& s);

// The process's start time in clock ticks since boot; nullopt when there is no
// such process or it is a zombie.
std::optional<uint64_t> processStartTicks(pid_t pid);
// Alive and the same process (start time matches) — not a reused pid.
bool processIsAlive(pid_t pid, uint64_t startTicks);

// True when a live supervisor holds the service's lock. Tests the lock without
// taking it (an open file description lock, F_OFD_GETLK), so it can never make
// a supervisor starting at that moment believe the lock is taken.
bool supervisorHoldsLock(const std::string& lockPath);

int64_t realtimeUs();
int64_t monotonicUs();

// One line a supervisor answers with: "ok <pid> <how>", "fail <reason>" or "busy".
struct Reply {
  enum class Kind { Ok, Fail, Busy } kind = Kind::Fail;
  pid_t pid = 0;
  std::string detail;  // how ("started", "adopted", "running", "stopped", "none") or the reason

  static Reply ok(pid_t pid, std::string how) { return {Kind::Ok, pid, std::move(how)}; }
  static Reply fail(std::string reason) { return {Kind::Fail, 0, std::move(reason)}; }
  std::string render() const;
  static Reply parse(std::string_view line);
};

}  // namespace mesh::supervise::builtin
