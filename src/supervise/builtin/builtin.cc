// The builtin backend: mesh-host's side of the runit/s6-style supervisors. It
// writes units, reads what the supervisors record, and talks to them over their
// control sockets — spawning one (detached) when a service has none.
#include <poll.h>
#include <unistd.h>

#include <climits>

#include "supervise/builtin/control.hh"
#include "supervise/builtin/service_files.hh"
#include "supervise/builtin/spawn_supervisor.hh"
#include "supervise/builtin/unit_config.hh"
#include "supervise/supervisor.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::supervise {

namespace {

using builtin::Reply;
using builtin::ServicePaths;

constexpr int kSpawnTimeoutMs = 30'000;
// Beyond TimeoutStopSec= (and for Type=notify TimeoutStartSec=), for the new
// process to exec.
constexpr int kGraceMs = 30'000;

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
    s.activeState = "active";
  } else if (state == "stopping") {
    s.active = true;
    s.activeState = "deactivating";
  } else if (state == "backoff") {
    s.activeState = "activating (auto-restart)";
  } else {
    s.activeState = state;  // inactive, failed
  }
}

class BuiltinSupervisor : public Supervisor {
 public:
  explicit BuiltinSupervisor(const Options& o)
      : stateDir_(o.stateDir),
        exe_(o.supervisorExe.empty() ? defaultSupervisorExe() : o.supervisorExe) {
    if (stateDir_.empty()) throw Error("the builtin supervisor needs a state directory");
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
    makeDirs(p.dir, 0755);
    atomicWrite(p.unit, unit.text, 0644);
  }

  void uninstall(const std::string& name) override {
    builtin::validateServiceName(name);
    stop(name);
    removeTree(paths(name).dir);  // the log stays, for a post-mortem
  }

  void start(const std::string& name) override { act(name, "start"); }
  void restart(const std::string& name) override { act(name, "restart"); }
  void stop(const std::string& name) override { act(name, "stop"); }

  std::vector<std::string> unsupportedKeys(const Unit& unit) const override {
    if (!unit.service.empty()) return builtin::unsupportedServiceKeys(unit.service);
    return builtin::unsupportedServiceKeys(builtin::parseServiceSection(unit.text));
  }

 private:
  ServicePaths paths(const std::string& name) const { return ServicePaths::of(stateDir_, name); }

  ServiceState observeOne(const std::string& name) const {
    ServiceState s;
    s.activeState = "inactive";
    if (name.empty() || name.find('/') != std::string::npos) return s;
    auto p = paths(name);
    auto text = readFile(p.unit);
    if (!text) return s;
    s.installed = true;
    s.installedText = std::move(*text);
    auto st = builtin::readStatus(p.status);
    bool supervised = builtin::supervisorHoldsLock(p.lock);
    if (!st) {
      if (supervised) s.activeState = "activating";  // a supervisor that has not written yet
      return s;
    }
    s.crashRestarts = st->crashRestarts;
    if (supervised) {
      describe(st->state, s);
    } else if (st->pid > 0 && builtin::processIsAlive(st->pid, st->startTicks)) {
      // Its supervisor died (killed -9?) but the service runs on; start() adopts it.
      // A Type=notify one may have died before READY=1.
      s.active = true;
      s.activeState =
          st->state == "starting" ? "activating (unsupervised)" : "active (unsupervised)";
    } else {
      s.activeState = st->state == "inactive" ? "inactive" : "failed";
    }
    if (s.active) {
      s.pid = st->pid;
      s.sinceUs = st->sinceUs;
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
  void act(const std::string& name, const std::string& verb) {
    builtin::validateServiceName(name);
    auto p = paths(name);
    auto failed = [&](const std::string& why) {
      return Error("{} of {} failed: {}", verb, name, why);
    };
    if (verb != "stop" && !lstatPath(p.unit)) throw failed("the unit is not installed");
    for (int pass = 0; pass < 100; ++pass) {
      if (!builtin::supervisorHoldsLock(p.lock)) {
        bool adoptOnly = verb == "stop";
        if (adoptOnly && !orphanAlive(p)) return;  // nothing runs: stopped already
        Reply r = builtin::spawnSupervisor(exe_, p, adoptOnly, waits(p).spawnMs);
        if (r.kind == Reply::Kind::Busy) continue;  // another one won the race: ask it
        if (r.kind == Reply::Kind::Fail) throw failed(r.detail);
        // It started a fresh process, or there was nothing to adopt for a stop: done.
        if (r.detail != "adopted" || verb == "start") return;
      }
      auto line = builtin::exchange(p.socket, verb, waits(p).replyMs);
      if (!line) {
        // Not listening yet (a supervisor setting up) or exited meanwhile.
        if (builtin::supervisorHoldsLock(p.lock)) ::poll(nullptr, 0, 10);
        continue;
      }
      Reply r = Reply::parse(*line);
      if (r.kind == Reply::Kind::Ok) return;
      if (r.kind == Reply::Kind::Fail) throw failed(r.detail);
    }
    throw failed(fmt::format("its supervisor does not answer on {}; see {}", p.socket, p.log));
  }

  bool orphanAlive(const ServicePaths& p) const {
    auto st = builtin::readStatus(p.status);
    return st && st->pid > 0 && builtin::processIsAlive(st->pid, st->startTicks);
  }

  std::string stateDir_;
  std::string exe_;
};

}  // namespace

std::unique_ptr<Supervisor> openBuiltin(const Options& o) {
  return std::make_unique<BuiltinSupervisor>(o);
}

}  // namespace mesh::supervise
