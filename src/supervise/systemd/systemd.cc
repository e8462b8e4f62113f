// The systemd backend: unit files in the unit directory, enabled by links; the
// service driven over D-Bus (sd-bus). Its one policy of its own is the reload:
// writing or removing a unit file only marks a daemon-reload as owed, and the
// reload happens once, just before the next start/restart/stop or at flush(). So a
// cycle makes at most one reload, and a cycle that installs nothing makes none.
#include <signal.h>

#include <chrono>
#include <optional>

#include "supervise/supervisor.hh"
#include "supervise/systemd/explain.hh"
#include "supervise/systemd/manager.hh"
#include "supervise/systemd/unit_dir.hh"
#include "util/error.hh"

namespace mesh::supervise {

namespace {

using namespace std::chrono_literals;
using sdbus::BusError;

// Longer than systemd's default TimeoutStartSec=/TimeoutStopSec= (90 s), so a job
// that honours the defaults ends (in success or failure) before we stop waiting.
constexpr auto kJobTimeout = 120s;
// A Type=simple start job is "done" once the process is forked; a service that
// dies at once is only seen a moment later. Watch it this long before calling the
// start good; a later death is the next cycle's "not running". (Type=notify: its
// job is done at READY=1, which is the readiness it declares; no window.)
constexpr auto kSettle = 100ms;

bool isRunning(const std::string& activeState) {
  return activeState == "active" || activeState == "activating" || activeState == "reloading";
}

class SystemdSupervisor final : public Supervisor {
 public:
  explicit SystemdSupervisor(const Options& o)
      : units_(o.unitDir.empty() ? "/etc/systemd/system" : o.unitDir),
        bus_(sdbus::Manager::connect(o.busAddress)) {}

  std::string name() const override { return "systemd"; }

  std::map<std::string, ServiceState> observe(const std::vector<std::string>& names,
                                              bool detailed) override {
    std::map<std::string, ServiceState> out;
    for (const auto& n : names) {
      sdbus::UnitDir::checkName(n);
      ServiceState& st = out[n];
      st.activeState = "inactive";
      if (auto text = units_.read(n)) {
        st.installed = true;
        st.installedText = std::move(*text);
        st.enabled = units_.enabled(n, st.installedText);
      } else {
        st.enabled = false;
      }
    }
    auto rows = bus_->listUnitsByNames(names);
    for (size_t i = 0; i < rows.size(); ++i) {
      // One row per name, in order; the row's own name differs for an alias.
      const std::string& n = rows.size() == names.size() ? names[i] : rows[i].name;
      auto it = out.find(n);
      if (it == out.end()) continue;
      ServiceState& st = it->second;
      st.activeState = rows[i].activeState;
      st.active = isRunning(st.activeState);
      st.running = (st.activeState == "active" || st.activeState == "reloading") &&
                   rows[i].subState != "auto-restart";
      // Waiting for Restart=: nothing runs, whatever "activating" suggests.
      if (rows[i].subState == "auto-restart") st.activeState += " (auto-restart)";
      if (detailed && rows[i].loadState != "not-found") readDetails(rows[i].path, st);
    }
    return out;
  }

  void install(const Unit& unit) override {
    if (units_.install(unit.name, unit.text)) reloadOwed_ = true;
  }

  void uninstall(const std::string& name) override {
    if (units_.remove(name)) reloadOwed_ = true;
  }

  void start(const std::string& name) override { startLike("start", "StartUnit", name); }
  void restart(const std::string& name) override { startLike("restart", "RestartUnit", name); }

  void stop(const std::string& name) override {
    sdbus::UnitDir::checkName(name);
    reloadIfOwed();
    try {
      runJob("stop", "StopUnit", name);
    } catch (const BusError& e) {
      if (e.name() != sdbus::kNoSuchUnit) throw;  // not loaded: nothing runs
    }
  }

  // As the builtin supervisor does: the unit's ExecReload= when it has one
  // (ReloadUnit, a job that runs it), else SIGHUP to the main process (KillUnit;
  // systemd itself refuses to reload a unit without ExecReload=). The main process
  // stays either way. A service that is not running fails the reload.
  void reloadService(const std::string& name) override {
    sdbus::UnitDir::checkName(name);
    reloadIfOwed();
    if (!reloadOwed_ && needsReload(name)) reload();
    const std::string path = bus_->loadUnit(name);
    if (bus_->getBool(path, "Unit", "CanReload")) return runJob("reload", "ReloadUnit", name);
    if (bus_->getString(path, "Unit", "ActiveState") != "active")
      throw Error("reload of {} failed: it is not running; see journalctl -u {}", name, name);
    try {
      bus_->killUnit(name, "main", SIGHUP);
    } catch (Error& e) {
      e.addContext(fmt::format("reload of {} failed: SIGHUP to its main process", name));
      e.addHint(fmt::format("see journalctl -u {}", name));
      throw;
    }
  }

  void flush() override { reloadIfOwed(); }
  int64_t reloadCount() const override { return reloads_; }

  std::vector<std::string> unsupportedKeys(const Unit&) const override { return {}; }

 private:
  void reload() {
    try {
      bus_->reload();
    } catch (Error& e) {
      e.addContext("systemd daemon-reload failed");
      e.addHint("see journalctl -b");
      throw;
    }
    ++reloads_;
    reloadOwed_ = false;
  }

  void reloadIfOwed() {
    if (reloadOwed_) reload();
  }

  void startLike(const char* verb, const char* method, const std::string& name) {
    sdbus::UnitDir::checkName(name);
    reloadIfOwed();
    // A unit file changed while no reload was owed to us (a crash between install
    // and start, a hand edit): systemd would start the definition it loaded before.
    if (!reloadOwed_ && needsReload(name)) reload();
    runJob(verb, method, name);
    checkStillRunning(verb, name);
  }

  bool needsReload(const std::string& name) {
    try {
      return bus_->getBool(bus_->loadUnit(name), "Unit", "NeedDaemonReload");
    } catch (const BusError&) {
      return false;  // the start itself will say what is wrong
    }
  }

  // Runs the job; a refused call or a result other than "done" throws with what
  // systemd said and where to look.
  void runJob(const char* verb, const char* method, const std::string& name) {
    std::string result;
    try {
      result = bus_->runJob(method, name, kJobTimeout);
    } catch (const BusError& e) {
      if (e.name() == sdbus::kNoSuchUnit && std::string(verb) == "stop") throw;
      std::string said = e.what();  // systemd's sentence, e.g. "Unit x.service not found."
      if (!said.empty() && said.back() == '.') said.pop_back();
      throw Error("{} of {} failed: {}; see journalctl -u {}", verb, name, said, name);
    } catch (Error& e) {
      e.addContext(fmt::format("{} of {} failed", verb, name));
      throw;
    }
    if (result == "done") return;
    std::string why = sdbus::explainJobResult(result);
    if (auto exit = lastExit(name)) why += " (" + sdbus::explainExit(*exit) + ")";
    throw Error("{} of {} failed: {}; see journalctl -u {}", verb, name, why, name);
  }

  // A started service that failed within the settle window is a failed start.
  // One that declares its readiness (Type=notify) was ready when its job was
  // done: no window.
  void checkStillRunning(const char* verb, const std::string& name) {
    const std::string path = bus_->loadUnit(name);
    if (bus_->getString(path, "Unit", "ActiveState") != "failed") {
      if (bus_->getString(path, "Service", "Type") == "notify") return;
      bus_->pump(kSettle);
      if (bus_->getString(path, "Unit", "ActiveState") != "failed") return;
    }
    throw Error("{} of {} failed: it stopped right after it started ({}); see journalctl -u {}",
                verb, name, sdbus::explainExit(readExit(path)), name);
  }

  sdbus::ExitInfo readExit(const std::string& path) {
    return {bus_->getString(path, "Service", "Result"),
            bus_->getI32(path, "Service", "ExecMainCode"),
            bus_->getI32(path, "Service", "ExecMainStatus")};
  }

  // How the service's main process last ended; nullopt when it did not fail or
  // systemd cannot say.
  std::optional<sdbus::ExitInfo> lastExit(const std::string& name) {
    try {
      auto exit = readExit(bus_->loadUnit(name));
      if (exit.result.empty() || exit.result == "success") return std::nullopt;
      return exit;
    } catch (const Error&) {
      return std::nullopt;
    }
  }

  void readDetails(const std::string& path, ServiceState& st) {
    try {
      st.pid = static_cast<pid_t>(bus_->getU32(path, "Service", "MainPID"));
      st.crashRestarts = bus_->getU32(path, "Service", "NRestarts");
      // When it entered the state it is in: for a running one its start, for one
      // waiting to be restarted the death of the last process.
      st.sinceUs = static_cast<int64_t>(
          bus_->getU64(path, "Unit", st.running ? "ActiveEnterTimestamp" : "StateChangeTimestamp"));
    } catch (const BusError& e) {
      // Collected by systemd between the listing and now: nothing runs.
      if (e.name() != sdbus::kUnknownObject) throw;
    }
  }

  sdbus::UnitDir units_;
  std::unique_ptr<sdbus::Manager> bus_;
  bool reloadOwed_ = false;
  int64_t reloads_ = 0;
};

}  // namespace

std::unique_ptr<Supervisor> openSystemd(const Options& o) {
  return std::make_unique<SystemdSupervisor>(o);
}

}  // namespace mesh::supervise
