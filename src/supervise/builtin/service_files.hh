// What the builtin backend and mesh-host-supervise share on disk, plus the
// readiness/reply lines they exchange. Per service, two directories:
//  - in the state directory, <stateDir>/services/<name>: `unit`, what mesh-host
//    installed;
//  - in the runtime directory, <runtimeDir>/<name>: `status`, `supervisor.lock`,
//    `control.sock`, `output` (the FIFO the service writes to) and, for
//    Type=notify, `notify.sock` — everything that identifies a live service, kept
//    where losing the state directory cannot lose it (default /run/mesh-host/…).
// Supervisors of older mesh-hosts kept all of it in the state directory (the
// "legacy" layout); they are still found and talked to there.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mesh::supervise::builtin {

struct ServicePaths {
  std::string dir, unit;                             // state: <stateDir>/services/<name>
  std::string runDir, status, lock, socket, output;  // runtime: <runtimeDir>/<name>
  std::string log;                                   // <stateDir>/log/<name>.log
  static ServicePaths of(const std::string& stateDir, const std::string& runtimeDir,
                         const std::string& name);
  static ServicePaths inDirs(const std::string& dir, const std::string& runDir,
                             const std::string& log);
  // The same service in the layout of older mesh-hosts: everything in `dir`.
  ServicePaths legacy() const { return inDirs(dir, dir, log); }
  bool isLegacy() const { return runDir == dir; }
};

// Where the supervisors of the state directory `stateDir` keep their runtime
// records, never inside it:
//  - $MESH_HOST_RUNTIME_DIR when set (tests, unusual setups: it is that state
//    directory's runtime directory itself);
//  - <root>/run/mesh-host for a state directory <root>/var/lib/mesh-host (the
//    default: /run/mesh-host; under a --root, inside that root);
//  - else, for root, /run/mesh-host/<32 hex of the SHA-256 of the state
//    directory's path>; for another user $XDG_RUNTIME_DIR/mesh-host/<hex>, or
//    /tmp/mesh-host-<uid>/<hex>.
std::string defaultRuntimeDir(const std::string& stateDir);

// <dir>/status as a symbolic link to <runDir>/status, so that the status is
// still where operators (and older tools) look for it. Never replaces a regular
// file there (the record of an older supervisor); does nothing when <dir> is
// missing or on any error.
void linkStatusIntoServiceDir(const ServicePaths& p);
// True when `path` is a regular file (not a link).
bool isRegularFile(const std::string& path);

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
  // What happened to the supervision of this process, e.g. "supervisor was gone;
  // adopted pid 42" after a new supervisor adopted an orphan. "" until then;
  // cleared when the supervisor starts a new process.
  std::string note;

  std::string render() const;
  [[nodiscard]] static std::optional<Status> parse(
      std::string_view json);  // nullopt when malformed
};

std::optional<Status> readStatus(const std::string& path);  // nullopt: none or unreadable
void writeStatus(const std::string& path, const Status& s);

// The process's start time in clock ticks since boot; nullopt when there is no
// such process or it is a zombie.
std::optional<uint64_t> processStartTicks(pid_t pid);
// Whether `pid` sleeps (state S: waiting for work, a timer, input) and has no
// child process: a service that has come up, not one still starting or about
// to exit with what a child tells it. False when it cannot be told.
bool processIsIdle(pid_t pid);
// Alive and the same process (start time matches) — not a reused pid.
bool processIsAlive(pid_t pid, uint64_t startTicks);

// The supervisor's lock file, `supervisor.lock` (0600: nobody but the
// supervisor's user can open it, so nobody else can take or hold it), holds two
// byte-range locks (open file description locks, F_OFD_SETLK): byte 0 for the
// supervisor's whole life, and byte 1 while its `status` file is behind what it
// knows (it could not write it: a full disk). Supervisors of older mesh-hosts
// lock `lock` beside it (0644), byte 0 and 1 or the whole file.
constexpr off_t kLiveByte = 0;
constexpr off_t kStaleByte = 1;

struct LockState {
  bool held = false;   // a live supervisor holds the lock
  bool stale = false;  // …and its status file is behind: ask it (control "observe")
};
// Tests the locks without taking them (F_OFD_GETLK), so it can never make a
// supervisor starting at that moment believe the lock is taken. On the older
// `lock`, which anyone may open, only a write lock counts (a supervisor's; a
// reader can take only read locks there). A caller who may not open the lock
// (an operator reading the status) is told whether the supervisor its `status`
// names is alive.
LockState supervisorLockState(const std::string& lockPath);
// True when a live supervisor holds the service's lock.
bool supervisorHoldsLock(const std::string& lockPath);
// The older supervisors' lock file beside `lockPath`.
std::string oldSupervisorLock(const std::string& lockPath);

int64_t realtimeUs();
int64_t monotonicUs();

// One line a supervisor answers with: "ok <pid> <how>", "fail <reason>" or "busy".
// To "observe", <how> is the status JSON, from the supervisor's memory.
struct Reply {
  enum class Kind { Ok, Fail, Busy } kind = Kind::Fail;
  pid_t pid = 0;
  std::string detail;  // how ("started", "adopted", "running", "stopped", "none") or the reason

  static Reply ok(pid_t pid, std::string how) { return {Kind::Ok, pid, std::move(how)}; }
  static Reply fail(std::string reason) { return {Kind::Fail, 0, std::move(reason)}; }
  std::string render() const;
  [[nodiscard]] static Reply parse(std::string_view line);
};

}  // namespace mesh::supervise::builtin
