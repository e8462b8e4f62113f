// The builtin backend: mesh-host's side of the runit/s6-style supervisors. It
// writes units, reads what the supervisors record, and talks to them over their
// control sockets — spawning one (detached) when a service has none, and one
// that adopts a service whose supervisor is gone.
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <set>
#include <utility>

#include "supervise/builtin/control.hh"
#include "supervise/builtin/service_files.hh"
#include "supervise/builtin/spawn_supervisor.hh"
#include "supervise/builtin/unit_config.hh"
#include "supervise/settle_window.hh"
#include "supervise/supervisor.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/trusted_path.hh"

namespace mesh::supervise {

namespace {

using builtin::Reply;
using builtin::ServicePaths;

constexpr int kSpawnTimeoutMs = 30'000;
// Beyond TimeoutStopSec= (and for Type=notify TimeoutStartSec=), for the new
// process to exec.
constexpr int kGraceMs = 30'000;
// How long observe() waits for a supervisor to answer "observe" (it asks only
// one whose status file is behind).
constexpr int kObserveMs = 5'000;

std::string defaultSupervisorExe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throwSys("cannot find this program's own path in /proc/self/exe");
  return parentOf(std::string(buf, static_cast<size_t>(n))) + "/mesh-host-supervise";
}

// What observe() reports for a recorded state, with a live supervisor.
void describe(const std::string& state, ServiceState& s) {
  if (state == "starting") {
    s.active = true;
    s.activeState = "activating";
  } else if (state == "active") {
    s.active = true;
    s.running = true;
    s.activeState = "active";
  } else if (state == "stopping") {
    s.active = true;
    s.activeState = "deactivating";
  } else if (state == "backoff") {
    // Waiting for Restart=: nothing runs, but its supervisor will start it — the
    // service is active (as systemd's auto-restart is "activating"), and held.
    s.active = true;
    s.held = true;
    s.heldWhy = "waiting to be restarted by Restart=";
    s.activeState = "activating (auto-restart)";
  } else {
    s.activeState = state;  // inactive, failed
  }
}

class BuiltinSupervisor : public Supervisor {
 public:
  explicit BuiltinSupervisor(const Options& o)
      : stateDir_(o.stateDir),
        runtimeDir_(o.runtimeDir),
        exe_(o.supervisorExe.empty() ? defaultSupervisorExe() : o.supervisorExe) {
    if (stateDir_.empty()) throw Error("the builtin supervisor needs a state directory");
    if (runtimeDir_.empty()) runtimeDir_ = builtin::defaultRuntimeDir(stateDir_);
  }

  std::string name() const override { return "builtin"; }

  std::map<std::string, ServiceState> observe(
      const std::vector<std::string>& names, bool /*detailed: everything is cheap here*/) override {
    std::map<std::string, ServiceState> out;
    for (const auto& n : names) out[n] = observeOne(n);
    return out;
  }

  void install(const Unit& unit) override {
    builtin::validateServiceName(unit.name);
    auto p = paths(unit.name);
    makeDirs(p.dir, 0750);  // in the state directory: nothing there for others
    atomicWrite(p.unit, unit.text, 0644);
    builtin::linkStatusIntoServiceDir(p);
  }

  void uninstall(const std::string& name) override {
    builtin::validateServiceName(name);
    stop(name);
    auto p = paths(name);
    removeTree(p.dir);  // the log stays, for a post-mortem
    removeTree(p.runDir);
    ::rmdir(runtimeDir_.c_str());  // once it holds no service; fails (harmlessly) before
  }

  void start(const std::string& name) override { launched(name, act(name, "start")); }
  void restart(const std::string& name) override { launched(name, act(name, "restart")); }

  // The settle rule (supervisor.hh): the supervisor itself already failed a start
  // whose process died in its first moments (or, Type=notify, before READY=1);
  // here every service started since is looked at once kSettle has passed since
  // its start: it must be the same process, still running.
  std::map<std::string, std::string> settle(const std::vector<std::string>& names) override {
    return window_.settle(
        names,
        [](std::chrono::milliseconds left) { ::poll(nullptr, 0, static_cast<int>(left.count())); },
        [this](const std::string& name, const pid_t& pid) { return stayedUp(name, pid); });
  }
  void stop(const std::string& name) override {
    window_.forget(name);
    (void)act(name, "stop");
  }
  void reloadService(const std::string& name) override { (void)act(name, "reload"); }

  // The end of an applying cycle: a service this cycle found running without
  // its supervisor (killed?) and did not start, restart or stop gets a new
  // supervisor that adopts it — no restart, the same pid — so that Restart= and
  // stops work again. Not done by observe() itself, which `plan` and `status`
  // also call and which must change nothing. A failure leaves it unsupervised,
  // as observe() keeps saying; the next cycle tries again.
  void flush() override {
    std::set<std::string> names;
    names.swap(orphans_);
    for (const auto& name : names) {
      try {
        auto [p, lock] = locate(name);
        if (lock.held || !orphanAlive(p)) continue;
        auto fresh = paths(name);
        prepareRuntimeDir();
        (void)builtin::spawnSupervisor(exe_, fresh, /*adoptOnly=*/true, waits(fresh).spawnMs);
      } catch (const std::exception&) {
        // Still unsupervised: observe() reports it so, and a later cycle retries.
      }
    }
  }

  std::vector<std::string> unsupportedKeys(const Unit& unit) const override {
    if (!unit.service.empty()) return builtin::unsupportedServiceKeys(unit.service);
    return builtin::unsupportedServiceKeys(builtin::parseServiceSection(unit.text));
  }

 private:
  // Where a new supervisor of the service keeps its records: the runtime directory.
  ServicePaths paths(const std::string& name) const {
    return ServicePaths::of(stateDir_, runtimeDir_, name);
  }

  // Where the service's records are now: in the runtime directory, or — for a
  // supervisor an older mesh-host started — in the state directory (legacy
  // layout). A live supervisor decides; else the one with a status file.
  std::pair<ServicePaths, builtin::LockState> locate(const std::string& name) const {
    auto p = paths(name);
    auto lock = builtin::supervisorLockState(p.lock);
    if (lock.held) return {p, lock};
    auto legacy = p.legacy();
    auto legacyLock = builtin::supervisorLockState(legacy.lock);
    if (legacyLock.held) return {legacy, legacyLock};
    // (Its status is a regular file; ours there is a link to the runtime one.)
    if (!lstatPath(p.status) && builtin::isRegularFile(legacy.status)) return {legacy, legacyLock};
    return {p, lock};
  }

  // Creates the runtime directory; refuses one that is not ours (a link, or
  // made by another user in a shared /tmp), or one another user could swap under
  // us: its sockets, locks and status files are then used by path, so every
  // directory and link on the way must be root's or ours (requireTrustedDirectory),
  // checked before anything is made there and again once it is. It is as open as
  // the state directory: 0750, in the state directory's group, so that the
  // operators who may read the state directory (`mesh-host status`) may read it too.
  void prepareRuntimeDir() const {
    const auto requireTrusted = [this](const std::string& dir, bool mayBeMissing) {
      try {
        requireTrustedDirectory(dir, mayBeMissing);
      } catch (Error& e) {
        e.addHint(
            fmt::format("the builtin supervisor keeps its runtime records in {} (set "
                        "MESH_HOST_RUNTIME_DIR to use another)",
                        runtimeDir_));
        throw;
      }
    };
    requireTrusted(runtimeDir_, /*mayBeMissing=*/true);
    makeDirs(parentOf(runtimeDir_), 0755);
    makeDirs(runtimeDir_, 0750);
    requireTrusted(parentOf(runtimeDir_), /*mayBeMissing=*/false);
    auto st = lstatPath(runtimeDir_);
    if (!st || !S_ISDIR(st->st_mode) || (st->st_uid != ::geteuid() && st->st_uid != 0))
      throw Error(
          "{} is not a directory of this user's; the builtin supervisor keeps its "
          "runtime records there (set MESH_HOST_RUNTIME_DIR to use another)",
          runtimeDir_);
    if (auto state = lstatPath(stateDir_); state && state->st_gid != st->st_gid)
      (void)::chown(runtimeDir_.c_str(), static_cast<uid_t>(-1), state->st_gid);
  }

  // The status a supervisor holds in memory: asked only when its status file is
  // behind (it could not write it). nullopt when it does not answer.
  static std::optional<builtin::Status> askStatus(const ServicePaths& p) {
    try {
      auto line = builtin::exchange(p.socket, "observe", kObserveMs);
      if (!line) return std::nullopt;
      Reply r = Reply::parse(*line);
      if (r.kind != Reply::Kind::Ok) return std::nullopt;  // an older one: no "observe"
      return builtin::Status::parse(r.detail);
    } catch (const std::exception&) {
      return std::nullopt;  // not allowed to connect (an operator), or no answer in time
    }
  }

  ServiceState observeOne(const std::string& name) {
    ServiceState s;
    s.activeState = "inactive";
    if (name.empty() || name.find('/') != std::string::npos) return s;
    auto [p, lock] = locate(name);
    if (auto text = readFile(p.unit)) {
      s.installed = true;
      s.installedText = std::move(*text);
    }
    std::optional<builtin::Status> st;
    if (lock.stale) st = askStatus(p);
    if (!st) st = builtin::readStatus(p.status);
    if (!st) {
      // A supervisor that has not written yet.
      if (lock.held) s.activeState = "activating";
      return s;
    }
    // A service can run with no unit installed (its state directory was lost):
    // it is reported as it runs, so that it is restarted or stopped, never
    // started a second time.
    s.crashRestarts = st->crashRestarts;
    if (lock.held) {
      describe(st->state, s);
    } else if (st->pid > 0 && builtin::processIsAlive(st->pid, st->startTicks)) {
      // Its supervisor died (killed -9?) but the service runs on: start/restart/
      // stop adopt it, and so does the end of an applying cycle (flush()).
      // A Type=notify one may have died before READY=1.
      s.active = true;
      s.running = st->state != "starting";
      s.activeState =
          st->state == "starting" ? "activating (unsupervised)" : "active (unsupervised)";
      orphans_.insert(name);
    } else if (!s.installed) {
      return s;
    } else {
      s.activeState = st->state == "inactive" ? "inactive" : "failed";
    }
    if (s.active) {
      s.pid = st->pid;
      s.sinceUs = st->sinceUs;
      if (lock.held && !st->note.empty()) {
        s.note = st->note;
        s.activeState += " (" + st->note + ")";
      }
    }
    return s;
  }

  // How long to wait for a supervisor's answer (−1: for ever). A new supervisor
  // answers once its process started; one asked to restart, once the old process
  // stopped and the new one started. A Type=notify start lasts until READY=1,
  // which the supervisor itself gives up on after TimeoutStartSec=.
  struct Waits {
    int spawnMs = kSpawnTimeoutMs;
    int replyMs = -1;
  };
  Waits waits(const ServicePaths& p) const {
    builtin::ServiceConfig c;
    try {
      if (auto text = readFile(p.unit))
        c = builtin::parseServiceConfig(builtin::parseServiceSection(*text));
    } catch (const std::exception&) {
      // The supervisor will say what is wrong with the unit.
    }
    const bool notify = c.type == builtin::ServiceType::Notify;
    const int64_t startUs = notify ? c.timeoutStartUs : 0;
    auto ms = [](int64_t us) {
      return us == builtin::kInfinity
                 ? -1
                 : static_cast<int>(std::min<int64_t>(us / 1000 + kGraceMs, INT_MAX));
    };
    Waits w;
    if (notify) w.spawnMs = ms(startUs);
    if (c.timeoutStopUs != builtin::kInfinity && startUs != builtin::kInfinity)
      w.replyMs = ms(c.timeoutStopUs + startUs);
    return w;
  }

  // Sends `verb` to the service's supervisor, spawning one when there is none.
  // A supervisor can exit (service stopped, or ended for good) at any moment;
  // each pass looks again, so that race costs a pass, never a wrong answer.
  Reply act(const std::string& name, const std::string& verb) {
    builtin::validateServiceName(name);
    auto p = paths(name);
    auto failed = [&](const std::string& why) {
      return Error("{} of {} failed: {}", verb, name, why);
    };
    if (verb != "stop" && !lstatPath(p.unit)) throw failed("the unit is not installed");
    for (int pass = 0; pass < 100; ++pass) {
      // The records of a live supervisor, or of its orphaned service — wherever
      // they are — so that a service is never started a second time.
      auto [where, lock] = locate(name);
      p = where;
      if (!lock.held) {
        bool adoptOnly = verb == "stop" || verb == "reload";
        if (adoptOnly && !orphanAlive(p)) {
          if (verb == "reload") throw failed("it is not running");
          return Reply::ok(0, "none");  // nothing runs: stopped already
        }
        // A new supervisor keeps its records in the runtime directory; it finds
        // (and adopts) an orphan recorded in either place.
        p = paths(name);
        prepareRuntimeDir();
        Reply r = builtin::spawnSupervisor(exe_, p, adoptOnly, waits(p).spawnMs);
        if (r.kind == Reply::Kind::Busy) continue;  // another one won the race: ask it
        if (r.kind == Reply::Kind::Fail) throw failed(r.detail);
        // It started a fresh process, or there was nothing to adopt for a stop: done.
        if (r.detail != "adopted" && verb == "reload") throw failed("it is not running");
        if (r.detail != "adopted" || verb == "start") return r;
      }
      auto line = builtin::exchange(p.socket, verb, waits(p).replyMs);
      if (!line) {
        // Not listening yet (a supervisor setting up) or exited meanwhile.
        if (builtin::supervisorHoldsLock(p.lock)) ::poll(nullptr, 0, 10);
        continue;
      }
      Reply r = Reply::parse(*line);
      if (r.kind == Reply::Kind::Ok) return r;
      if (r.kind == Reply::Kind::Fail) throw failed(r.detail);
    }
    throw failed(fmt::format("its supervisor does not answer on {}; see {}", p.socket, p.log));
  }

  // A start or restart that succeeded: what settle() looks at is its pid; a
  // Type=notify one started at READY=1 and has no window.
  void launched(const std::string& name, const Reply& r) {
    bool notify = false;
    try {
      if (auto text = readFile(paths(name).unit))
        notify = builtin::parseServiceConfig(builtin::parseServiceSection(*text)).type ==
                 builtin::ServiceType::Notify;
    } catch (const std::exception&) {
      // It started: the unit parsed when its supervisor read it.
    }
    window_.launched(name, r.pid, notify);
  }

  // "" when the service started as `pid` is still that process, running; else why
  // not, with its last line of output.
  std::string stayedUp(const std::string& name, pid_t pid) const {
    auto [p, lock] = locate(name);
    std::optional<builtin::Status> st;
    if (lock.stale) st = askStatus(p);
    if (!st) st = builtin::readStatus(p.status);
    if (st && lock.held && st->state == "active" && (pid <= 0 || st->pid == pid)) return {};
    std::string why = notSettled(st && !st->lastExit.empty() ? st->lastExit : "it stopped",
                                 lastServiceLine(p.log));
    if (st && lock.held && st->state == "active")
      why += fmt::format(" (restarted by Restart= as pid {})", st->pid);
    else if (st && st->state == "backoff")
      why += " (waiting to be restarted by Restart=)";
    return why;
  }

  // The last line the service itself wrote to its log (not a note of its
  // supervisor's), without its time stamp; "" when there is none.
  static std::string lastServiceLine(const std::string& log) {
    auto text = readFile(log);
    if (!text) return {};
    std::string_view all(*text);
    if (all.size() > 65536) all.remove_prefix(all.size() - 65536);
    while (!all.empty()) {
      if (all.back() == '\n') all.remove_suffix(1);
      const size_t from = all.rfind('\n');
      std::string_view line = from == std::string_view::npos ? all : all.substr(from + 1);
      all.remove_suffix(line.size());
      if (const size_t sp = line.find(' '); sp != std::string_view::npos)
        line.remove_prefix(sp + 1);
      if (line.empty() || line.starts_with("mesh-host-supervise: ")) continue;
      return reasonLine(line);
    }
    return {};
  }

  bool orphanAlive(const ServicePaths& p) const {
    auto st = builtin::readStatus(p.status);
    return st && st->pid > 0 && builtin::processIsAlive(st->pid, st->startTicks);
  }

  std::string stateDir_;
  std::string runtimeDir_;
  std::string exe_;
  // Services observe() found running without a supervisor; flush() adopts them.
  std::set<std::string> orphans_;
  // Started or restarted, not settled yet: each with the pid it started.
  SettleWindow<pid_t> window_;
};

}  // namespace

std::unique_ptr<Supervisor> openBuiltin(const Options& o) {
  return std::make_unique<BuiltinSupervisor>(o);
}

}  // namespace mesh::supervise
