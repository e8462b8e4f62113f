// Supervisor backends: what runs a `process` resource's service. mesh-host renders
// a systemd-style unit text; a backend installs it, starts, restarts and stops the
// service, and reports what it observes. Two backends: systemd (over D-Bus) and
// builtin (a small detached supervisor per service, runit/s6-style), chosen by
// --supervisor (auto: systemd when it is PID 1 and reachable, else builtin).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mesh::supervise {

// A unit as mesh-host renders it. `text` is the exact file content; `service`
// carries the [Service] keys it was rendered from (values in order; a key given
// as an array has several values) so a backend need not parse the text.
struct Unit {
  std::string name;  // "demo.service"
  std::string text;
  std::map<std::string, std::vector<std::string>> service;
};

struct ServiceState {
  bool installed = false;     // a unit with this name is installed by us
  std::string installedText;  // its text ("" when not installed)
  // When known, what changed the installed unit outside mesh-host: said in the
  // drift reason, "unit edited (<this>)" (the fault seam of fault.hh sets it).
  std::string unitEdit;
  bool active = false;  // running, starting, or waiting to be restarted by Restart=
  // Its main process runs now: active and not starting, stopping or waiting for
  // Restart=. What `status` calls up; anything else is down.
  bool running = false;
  // "active", "inactive", "failed", "activating", "activating (auto-restart)", …
  std::string activeState;
  pid_t pid = 0;        // main pid, 0 when none
  int64_t sinceUs = 0;  // realtime µs when it entered its current state; 0 unknown
  // Down, waiting for its supervisor to start it again (Restart=, RestartSec=,
  // the builtin supervisor's backoff; systemd's sub-state auto-restart), or held
  // down by systemd's start limit (StartLimitBurst=, Result=start-limit-hit): the
  // backend is handling a crash loop. mesh-host starts no such service of its own
  // accord (that would override the backoff); it reports it failing. `heldWhy`
  // says what it is held in.
  bool held = false;
  std::string heldWhy;  // "waiting to be restarted by Restart=", "start limit hit"
  // Automatic restarts (Restart=) since the service was last started or
  // restarted on request: both backends start counting again then (systemd's
  // NRestarts). The process record adds what it counted before each restart
  // mesh-host makes, so that `status` counts crashes for ever, as it counts
  // mesh-host's own restarts.
  int64_t crashRestarts = 0;
  // Starts at boot. systemd: every link its [Install] section asks for
  // (multi-user.target.wants/<name>) is in place; builtin: always true.
  bool enabled = true;
  // What happened to its supervision, when something did (builtin: "supervisor
  // was gone; adopted pid 42"); also shown in activeState, in parentheses.
  std::string note;
};

// A unit mesh-host did not install (the `service` kind): what systemd knows of
// it and what mesh-host added to it, read with no job and no daemon-reload. Its
// running state is observe()'s, as for any service.
struct ForeignUnit {
  std::string loadState;     // "loaded", "not-found", "masked", "bad-setting", …
  std::string fragmentPath;  // the vendor's unit file ("" when none)
  // The enable links its [Install] section asks for; none: a static unit.
  std::vector<std::string> enableLinks;
  bool enabled = false;               // every one of them is in the unit directory
  std::optional<std::string> dropin;  // the text of mesh-host's drop-in, when there is one
};

// mesh-host's drop-in of a unit it did not install, in the unit directory:
// <unit-dir>/<unit>.d/<kDropinName>. Named to sort after a vendor's own drop-ins
// (10-…, 20-…) and before an operator's 90-… ones.
inline constexpr const char* kDropinName = "50-mesh-host.conf";

class Supervisor {
 public:
  virtual ~Supervisor() = default;
  virtual std::string name() const = 0;  // "systemd" or "builtin"

  // The state of several services, read in one go: for systemd one bus call for
  // all of them (ListUnitsByNames) plus reading the unit files — that is what a
  // cycle needs (installedText, active, activeState). With `detailed`, pid,
  // sinceUs and crashRestarts are filled too (may cost a call per unit; used by
  // `status` and tests). Unknown services come back not installed.
  virtual std::map<std::string, ServiceState> observe(const std::vector<std::string>& names,
                                                      bool detailed = false) = 0;

  // Writes the unit (atomically). Does not start or reload anything by itself;
  // a backend that needs a reload (systemd) does it once, lazily, before the next
  // start/restart/stop — so a cycle makes at most one reload, and a no-op cycle
  // none.
  virtual void install(const Unit& unit) = 0;
  // Removes the unit file (the service must be stopped first).
  virtual void uninstall(const std::string& name) = 0;

  // Each waits until the job is done and throws mesh::Error with the backend's
  // reason when it failed (e.g. "start of demo.service failed: exit-code").
  virtual void start(const std::string& name) = 0;
  virtual void restart(const std::string& name) = 0;
  virtual void stop(const std::string& name) = 0;
  // Reloads a running service in place (its main process stays): systemd's
  // ReloadUnit (the unit's ExecReload=); builtin: ExecReload=, else SIGHUP to the
  // main process. Throws mesh::Error when the service is not running or the
  // reload failed.
  virtual void reloadService(const std::string& name) = 0;

  // The settle rule, the same for both backends: after start() or restart(), a
  // service must stay up for kSettle — the same process, running — to count as
  // started; a Type=notify one counts as started at READY=1 instead (start() and
  // restart() wait for it, bounded by TimeoutStartSec=), and a Type=oneshot one
  // when its job is done. Called once after the starts and restarts of a cycle,
  // with their names: waits until each has been up kSettle since its start()
  // or restart() returned (all of them at once: settling many costs one window),
  // then returns, for each one that did not stay up, why — "exited with status 1
  // within 100ms of its start: config is broken". Those that did are not in
  // the map. Names never started by this object are not waited for.
  virtual std::map<std::string, std::string> settle(const std::vector<std::string>& names) {
    (void)names;
    return {};
  }

  // Ends a cycle: a backend that owes a reload (after an uninstall) does it now.
  virtual void flush() {}

  // How many daemon-reloads this backend has made (systemd); for tests and the
  // benchmark, which require none in a no-op cycle and at most one per cycle.
  virtual int64_t reloadCount() const { return 0; }

  // Unit keys (in [Service]) this backend cannot honour: warnings, never dropped
  // silently.
  virtual std::vector<std::string> unsupportedKeys(const Unit& unit) const = 0;

  // Units mesh-host did not install (the `service` kind): only a backend that
  // says it drives them (systemd) implements the three calls below; the others
  // throw, and the cycle refuses such a declaration before acting (exit 2).
  virtual bool drivesForeignUnits() const { return false; }
  virtual ForeignUnit observeForeign(const std::string& name);
  // Writes `text` as mesh-host's drop-in of `name`, or removes it (nullopt; its
  // directory too once empty). A daemon-reload is owed, made as after install().
  virtual void setDropin(const std::string& name, const std::optional<std::string>& text);
  // Makes (or removes) the enable links `unit`'s [Install] section asks for, as
  // `systemctl enable` (disable) would; never touches the vendor's unit file.
  virtual void setEnabled(const std::string& name, const ForeignUnit& unit, bool enabled);
};

// How long a started service must stay up (Supervisor::settle): 100 ms. What
// fails at once — a missing program or library, a bad flag, a config that does
// not parse, a port in use — shows within 0.1–20 ms on this machine; a tenth of a
// second is well past that, and was already the window of both backends' own
// checks. Since the cycle settles its starts together, it is paid once per cycle
// that starts anything, never per service; a later death is the supervisor's
// (Restart=) and the next cycle's to report.
inline constexpr std::chrono::milliseconds kSettle{100};

struct Options {
  std::string stateDir;  // builtin: units live under <stateDir>/services/<name>/
  // builtin: the mesh-host-supervise executable; "" → beside /proc/self/exe.
  std::string supervisorExe;
  std::string unitDir = "/etc/systemd/system";  // systemd
  std::string busAddress;  // systemd: "" → sd_bus_open_system (DBUS_SYSTEM_BUS_ADDRESS)
  // builtin: where supervisors keep their runtime records (status, lock, control
  // socket), per service <runtimeDir>/<name>/; "" → builtin::defaultRuntimeDir
  // (MESH_HOST_RUNTIME_DIR, /run/mesh-host for /var/lib/mesh-host, …). Last, so that
  // positional brace-initialisers of the fields above stay valid (and, with its
  // default initialiser, free of -Wmissing-field-initializers).
  std::string runtimeDir = {};
  // systemd: where to read a failed service's last line of output — a directory
  // of journal files; "" → $MESH_HOST_JOURNAL_DIR, else the local system journal.
  std::string journalDir = {};
};

std::unique_ptr<Supervisor> openBuiltin(const Options& o);
std::unique_ptr<Supervisor> openSystemd(const Options& o);
// "auto" | "builtin" | "systemd"; throws mesh::InputError for systemd when it is
// not reachable.
std::unique_ptr<Supervisor> openSupervisor(const std::string& which, const Options& o);

}  // namespace mesh::supervise
