// The systemd backend: unit files in the unit directory, enabled by links; the
// service driven over D-Bus (sd-bus). Its one policy of its own is the reload:
// writing or removing a unit file only marks a daemon-reload as owed, and the
// reload happens once, just before the next start/restart/stop or at flush(). So a
// cycle makes at most one reload, and a cycle that installs nothing makes none.
#include <signal.h>

#include <chrono>
#include <optional>

#include "supervise/settle_window.hh"
#include "supervise/supervisor.hh"
#include "supervise/systemd/explain.hh"
#include "supervise/systemd/journal.hh"
#include "supervise/systemd/manager.hh"
#include "supervise/systemd/unit_dir.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::supervise {

namespace {

using namespace std::chrono_literals;
using sdbus::BusError;

// Longer than systemd's default TimeoutStartSec=/TimeoutStopSec= (90 s), so a job
// that honours the defaults ends (in success or failure) before we stop waiting.
constexpr auto kJobTimeout = 120s;
// How long a failure's reason waits for journald to write the service's output
// (it may lag the exit by a few ms); only ever paid by a start that failed.
constexpr auto kJournalWait = 200ms;
bool isRunning(const std::string& activeState) {
  return activeState == "active" || activeState == "activating" || activeState == "reloading";
}

class SystemdSupervisor final : public Supervisor {
 public:
  explicit SystemdSupervisor(const Options& o)
      : units_(o.unitDir.empty() ? "/etc/systemd/system" : o.unitDir),
        bus_(sdbus::Manager::connect(o.busAddress)),
        journalDir_(sdjournal::journalDirectory(o.journalDir)) {}

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
      if (rows[i].subState == "auto-restart") {
        st.activeState += " (auto-restart)";
        st.held = true;
        st.heldWhy = "waiting to be restarted by Restart=";
      }
      // Held down by its start limit (StartLimitBurst=): one property read, for a
      // failed unit only.
      if (st.activeState == "failed" && rows[i].loadState != "not-found") {
        try {
          if (bus_->getString(rows[i].path, "Service", "Result") == "start-limit-hit") {
            st.held = true;
            st.heldWhy = "its start limit was hit (StartLimitBurst=)";
          }
        } catch (const BusError&) {
          // Collected meanwhile: not held.
        }
      }
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
  // The settle rule (supervisor.hh). A Type=simple start job is "done" once the
  // process is forked, so a service that dies at once is seen only a moment
  // later — and with Restart= it is then "activating (auto-restart)", not failed.
  // Each service started is looked at once kSettle has passed since its job was
  // done: it must be active, not waiting for Restart=, with the same main pid.
  // (Type=notify: its job is done at READY=1, the readiness it declares; oneshot:
  // its job is done when it has run. Neither has a window.)
  std::map<std::string, std::string> settle(const std::vector<std::string>& names) override {
    return window_.settle(
        names, [this](std::chrono::milliseconds left) { bus_->pump(left); },
        [this](const std::string& name, const sdjournal::Run& run) { return stayedUp(name, run); });
  }
  void restart(const std::string& name) override { startLike("restart", "RestartUnit", name); }

  void stop(const std::string& name) override {
    sdbus::UnitDir::checkName(name);
    window_.forget(name);
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

  // Units mesh-host did not install: read from systemd (load state, the vendor's
  // file) and the unit directory; no job, no reload.
  bool drivesForeignUnits() const override { return true; }
  ForeignUnit observeForeign(const std::string& name) override {
    sdbus::UnitDir::checkName(name);
    ForeignUnit f;
    auto rows = bus_->listUnitsByNames({name});
    f.loadState = rows.empty() ? "not-found" : rows[0].loadState;
    if (!rows.empty() && f.loadState != "not-found")
      f.fragmentPath = bus_->getString(rows[0].path, "Unit", "FragmentPath");
    if (!f.fragmentPath.empty())
      f.enableLinks = sdbus::UnitDir::enableLinks(name, readFile(f.fragmentPath).value_or(""));
    f.enabled = !f.enableLinks.empty() && units_.linked(f.enableLinks);
    f.dropin = units_.readDropin(name);
    return f;
  }
  void setDropin(const std::string& name, const std::optional<std::string>& text) override {
    if (text ? units_.writeDropin(name, *text) : units_.removeDropin(name)) reloadOwed_ = true;
  }
  void setEnabled(const std::string& name, const ForeignUnit& unit, bool enabled) override {
    sdbus::UnitDir::checkName(name);
    if (enabled ? units_.link(unit.enableLinks, unit.fragmentPath)
                : units_.unlink(unit.enableLinks))
      reloadOwed_ = true;
  }

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
    // Held by its start limit, systemd refuses the job: mesh-host starts it only
    // for a cause (a changed declaration, a restart-on), which is a reset too.
    if (startLimitHit(name)) bus_->resetFailedUnit(name);
    const uint32_t restartsBase = restartsBefore(name);
    const uint64_t sinceUs = realtimeUs();
    runJob(verb, method, name, sinceUs);
    launchedNow(name, sinceUs, restartsBase);
  }

  // What NRestarts counts from once a start job is done, read before the job: read
  // after it, a run that ended at once and was restarted already (Restart=,
  // RestartSec=0) would look like the run started. systemd starts the count again
  // at a start (or restart) unless the unit is waiting to be restarted by Restart=.
  uint32_t restartsBefore(const std::string& name) {
    try {
      const std::string path = bus_->loadUnit(name);
      if (bus_->getString(path, "Unit", "SubState") != "auto-restart") return 0;
      return bus_->getU32(path, "Service", "NRestarts");
    } catch (const BusError&) {
      return 0;  // the start itself will say what is wrong
    }
  }

  bool startLimitHit(const std::string& name) {
    try {
      const std::string path = bus_->loadUnit(name);
      return bus_->getString(path, "Unit", "ActiveState") == "failed" &&
             bus_->getString(path, "Service", "Result") == "start-limit-hit";
    } catch (const BusError&) {
      return false;  // the start itself will say what is wrong
    }
  }

  // A start or restart whose job was done: what settle() looks at — its main
  // process, and when it was asked for. No more than that on the success path: the
  // journal's other key, the invocation id, is read only when it failed
  // (outputOf).
  void launchedNow(const std::string& name, uint64_t sinceUs, uint32_t restartsBase) {
    sdjournal::Run run;
    run.sinceUs = sinceUs;
    run.restartsBase = restartsBase;
    bool windowless = false;  // Type=notify or oneshot
    try {
      const std::string path = bus_->loadUnit(name);
      const std::string type = bus_->getString(path, "Service", "Type");
      windowless = type == "notify" || type == "notify-reload" || type == "oneshot";
      run.mainPid = bus_->getU32(path, "Service", "MainPID");
      // Exited already (MainPID 0): its ExecMainPID still names it, and a main
      // process running at the look is then another one, which Restart= made.
      if (run.mainPid == 0 && !windowless)
        run.mainPid = bus_->getU32(path, "Service", "ExecMainPID");
    } catch (const BusError&) {
      // Collected already: settle() finds it gone.
    }
    window_.launched(name, std::move(run), windowless);
  }

  // "" when the service started as `run` is still running, the same main
  // process; else why not, with its last line of output when the journal has it.
  std::string stayedUp(const std::string& name, const sdjournal::Run& run) {
    std::string path, active, sub;
    uint32_t pid = 0, restarts = 0;
    try {
      path = bus_->loadUnit(name);
      active = bus_->getString(path, "Unit", "ActiveState");
      sub = bus_->getString(path, "Unit", "SubState");
      pid = bus_->getU32(path, "Service", "MainPID");
      restarts = bus_->getU32(path, "Service", "NRestarts");
    } catch (const BusError&) {
      return notSettled("it stopped", lastLine(name, run)) + seeJournal(name);
    }
    // A run that ended at once and was restarted before launchedNow read its pid left
    // it the pid of the next run: the same pid now, but a count one more.
    const bool pidOfTheNext = pid == run.mainPid && restarts > run.restartsBase;
    if (active == "active" && sub != "auto-restart" && (run.mainPid == 0 || pid == run.mainPid) &&
        !pidOfTheNext)
      return {};
    // Of the run started: not the next run's pid or invocation, but the first exit
    // since the job was asked for.
    sdjournal::Run firstExit;
    firstExit.sinceUs = run.sinceUs;
    const sdjournal::Run started = pidOfTheNext ? firstExit : outputOf(path, run);
    std::string why =
        notSettled(describeExit(exitOf(name, path, started)), lastLine(name, started));
    if (active == "active" && sub != "auto-restart")
      why += fmt::format(" (restarted by Restart= as pid {})", pid);
    else if (sub == "auto-restart")
      why += " (waiting to be restarted by Restart=)";
    return why + seeJournal(name);
  }

  // `run` with its invocation id, read now: the unit's InvocationID is still the
  // run's while its ExecMainPID is (a run Restart= made since has its own).
  sdjournal::Run outputOf(const std::string& path, sdjournal::Run run) {
    try {
      const std::string id = bus_->getHex(path, "Unit", "InvocationID");
      const uint32_t execMain = bus_->getU32(path, "Service", "ExecMainPID");
      if (run.mainPid == 0) run.mainPid = execMain;
      if (execMain == run.mainPid) run.invocationId = id;
    } catch (const Error&) {
      // Collected meanwhile: the main pid alone finds its output.
    }
    return run;
  }

  static std::string seeJournal(const std::string& name) {
    return fmt::format("; see journalctl -u {}", name);
  }

  // The last line of output `run` of `name` wrote to the journal; "" when it
  // wrote none or the journal cannot be read (the reason then points at
  // journalctl alone). Only ever on a failure's path: a start that settles never
  // opens the journal.
  std::string lastLine(const std::string& name, const sdjournal::Run& run) const {
    return sdjournal::lastLine(journalDir_, name, run, kJournalWait).value_or("");
  }

  // How the main process of `run` ended. The unit's Result and ExecMain* say it
  // until Restart= starts the next run, which resets them (Result=success, the
  // new process's pid): from then on only systemd's "Main process exited" entry
  // in the journal says it.
  sdbus::ExitInfo exitOf(const std::string& name, const std::string& path,
                         const sdjournal::Run& run) {
    sdbus::ExitInfo exit;
    try {
      exit = readExit(path);
      if (exit.result != "success" && exit.code != 0) return exit;
    } catch (const BusError&) {
      // Collected meanwhile: the journal may still say.
    }
    if (auto logged = sdjournal::exitOf(journalDir_, name, run, kJournalWait)) {
      if (logged->code == "exited")
        return {logged->status == 0 ? "success" : "exit-code", CLD_EXITED, logged->status};
      if (logged->code == "killed") return {"signal", CLD_KILLED, logged->status};
      if (logged->code == "dumped") return {"core-dump", CLD_DUMPED, logged->status};
    }
    return exit;
  }

  // How the main process ended, in the words of the builtin supervisor ("exited
  // with status 1", "killed by signal 9 (KILL)"), with systemd's own exit
  // statuses explained.
  static std::string describeExit(const sdbus::ExitInfo& e) {
    if (e.code == CLD_EXITED) {
      if (e.status >= 200 && e.status < 256) return "failed (" + sdbus::explainExit(e) + ")";
      return fmt::format("exited with status {}", e.status);
    }
    if (e.code == CLD_KILLED || e.code == CLD_DUMPED)
      return fmt::format("killed by signal {} ({})", e.status,
                         sigabbrev_np(e.status) ? sigabbrev_np(e.status) : "?");
    return "it stopped (" + sdbus::explainExit(e) + ")";
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
  // `sinceUs`, for a start or restart: when it was asked for (its failure's
  // reason then names the run's last line of output).
  void runJob(const char* verb, const char* method, const std::string& name, uint64_t sinceUs = 0) {
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
    // A start that failed: the last line the run wrote, as after a settle.
    if (sinceUs != 0)
      if (auto line = lastLine(name, failedRun(name, sinceUs)); !line.empty())
        why += ": " + reasonLine(line);
    throw Error("{} of {} failed: {}; see journalctl -u {}", verb, name, why, name);
  }

  // The run a failed start job made, as systemd keeps it after the failure.
  sdjournal::Run failedRun(const std::string& name, uint64_t sinceUs) {
    sdjournal::Run run;
    run.sinceUs = sinceUs;
    try {
      return outputOf(bus_->loadUnit(name), run);
    } catch (const Error&) {
      return run;  // not loaded: it never ran, and wrote nothing
    }
  }

  static uint64_t realtimeUs() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
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
  std::string journalDir_;               // "" → the local journal
  SettleWindow<sdjournal::Run> window_;  // started or restarted, not settled yet
  bool reloadOwed_ = false;
  int64_t reloads_ = 0;
};

}  // namespace

std::unique_ptr<Supervisor> openSystemd(const Options& o) {
  return std::make_unique<SystemdSupervisor>(o);
}

}  // namespace mesh::supervise
