// The system simulation: the fault simulation (sim.cc) grown from the cycle to the
// agent around it. One seeded driver runs the agent's real decision logic
// (agent/core.hh: triggers, debounces, which declaration a cycle runs, what is
// published after it) on a virtual clock, and the real cycle in process
// (runLocked, under the real state lock, on a real temp tree and store) with a
// model of each supervisor backend. Each step draws one of:
//   - a declaration edit, seen by the agent's event loop as an inotify event on
//     the file (the 200 ms debounce), or a broken edit (invalid TOML);
//   - an edit and a by-hand `mesh-host apply` of it while the agent is idle, or
//     racing the agent's next cycle: the apply runs where that cycle has taken its
//     copy of the declaration and waits for the state lock;
//   - SIGHUP; the interval passing; a drift (a managed file changed outside);
//   - mesh-host pause, or resume (the pause file written or removed, as the event
//     loop's inotify sees it): every step meanwhile still happens, edits, pushes and
//     drift included, and a by-hand apply is one with --force;
//   - SIGTERM in the middle of a cycle (the stop flag set at the cycle's Nth crash
//     point, as the event loop sets it while the cycle's thread runs), after which
//     the agent exits and a new one starts, as systemd restarts it;
//   - fleet mode: a push arriving, as an accepted declaration handed to the agent
//     through the path FleetLink's accept takes (takeAccepted), its published
//     statuses captured in memory;
//   - a supervisor event: the next start fails, a running service crashes and
//     waits in its Restart= back-off, the back-off ends, a service in its back-off
//     reaches its start limit (systemd; the builtin supervisor's back-off at its cap);
//     and a declaration whose service exits at once when started;
//   - the disk fills (the state directory's: store and files; or only the managed
//     tree's), and room comes back;
//   - fleet mode: a restart's slot (--max-parallel-restarts) free, held by another
//     node then freed, held while SIGTERM comes, or held past its timeout.
// The supervisor model has two backends, builtin and systemd semantics (systemd
// reloads lazily before a start and after an uninstall, reports enablement; the
// builtin one leaves the service's supervisor running when its unit directory is
// removed before it is stopped — a process mesh-host forgot runs on). Every seed
// runs once per backend; the outcomes must be the same.
// After every step (the agent run until it has nothing more to do) it checks:
//   - no cycle applies a declaration older than one already applied (by the agent
//     or by hand);
//   - each cause is paid once however the cycles were triggered: in one step a
//     service restarts at most as often as the step changed its unit or its
//     restart-on file (an edit, an outside drift), and after a clean cycle every
//     running service started after the last change of each;
//   - nothing undeclared is installed or running after a clean cycle
//     (--no-undeclared-check turns it off: only to look past it);
//   - no status, local (the store's finished cycles, generations) or published
//     (fleet mode), claims a cycle that did not finish;
//   - while paused, the agent's cycles only plan: nothing under the root changes,
//     nothing restarts, no cycle is recorded, and a published status says paused and
//     claims nothing applied it did not claim before; after resume the causes kept
//     meanwhile are paid once (the checks above);
//   - a service its supervisor holds (back-off, start limit) is started only for a
//     cause since mesh-host last started it, and is reported failing, never unchanged;
//   - while cycles cannot run (a full disk) status's health is failing and cycles by
//     event back off; a restart owed when the disk filled is made once room is back;
//     a change that failed on ENOSPC, then succeeded, is not churn;
//   - under a slot limit every restart holds a slot, freed by the cycle's end; one
//     owed when SIGTERM came during the slot wait is made later;
//   - both backends' models give the same outcomes (verdict and reason of every
//     resource of every cycle, and the restarts) for the same events.
// A mismatch prints the seed, step and backend; `mesh_sim_system --seed S --steps N`
// replays it (MESH_SIM_VERBOSE=1 shows each cycle, MESH_SIM_KEEP=1 keeps the dir).
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "agent/core.hh"
#include "agent/fleet_start.hh"
#include "agent/locked_run.hh"
#include "apply/churn.hh"
#include "apply/health.hh"
#include "decl/parse.hh"
#include "disk.hh"
#include "state/drift_note.hh"
#include "state/pause.hh"
#include "state/pending_note.hh"
#include "state/store.hh"
#include "supervise/supervisor.hh"
#include "util/digest.hh"
#include "util/error.hh"
#include "util/faults.hh"

namespace mesh::sim {
namespace {

namespace fs = std::filesystem;
using agent::Clock;
using namespace std::chrono_literals;

bool verbose() {
  static const bool v = std::getenv("MESH_SIM_VERBOSE") != nullptr;
  return v;
}

// When a service entered the state it is in: the next millisecond. A real start
// takes longer than one, and the cycle judges a restart owed at millisecond T paid by
// a start after T (apply/cycle/restart_ledger.cc causesFor): in process, with the same millisecond,
// the outcome would depend on the clock.
int64_t startedUs() {
  using namespace std::chrono;
  return (duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count() + 1) * 1000;
}

enum class Backend { Builtin, Systemd };

// The machine's service manager: survives every agent. Starts are stamped with a
// logical tick.
struct World {
  struct Service {
    bool installed = false;
    std::string text;
    bool failsAtStart = false;  // its program exits 1 at once (Environment V=2)
    bool active = false;        // running, or waiting in its Restart= back-off
    bool running = false;
    uint64_t startTick = 0;  // of its last start (by anyone)
    uint64_t installTick = 0;
    int pid = 0;
    int64_t sinceUs = 0;
    int64_t crashRestarts = 0;
    bool enabled = false;
    // Held at its start limit: systemd's StartLimitBurst= hit (failed,
    // Result=start-limit-hit); the builtin supervisor, which has no start limit, holds
    // it in its back-off at the 30 s cap. Either way its supervisor keeps it down for
    // longer than the simulation looks: only a start for a cause brings it back.
    bool limitHit = false;
    uint64_t meshStartTick = 0;  // of mesh-host's last start or restart of it
    // Its supervisor holds it down: waiting in its Restart= back-off, or at its limit.
    bool held() const { return limitHit || (active && !running); }
  };
  // A start or restart mesh-host made of a service its supervisor held down.
  struct HeldStart {
    std::string name;
    uint64_t tick = 0, prevMeshStart = 0;
    bool limit = false;
  };
  std::map<std::string, Service> services;
  uint64_t tick = 0;
  int pids = 100;
  int failNext = 0;            // the next N starts/restarts fail
  int64_t reloads = 0;         // systemd: daemon-reloads
  bool reloadPending = false;  // systemd: a unit file changed since the last reload
  std::map<std::string, int> restartsThisStep;  // mesh-host's restarts of a running service
  std::vector<std::string> restartLog;          // of the cycle in hand
  std::vector<HeldStart> heldStarts;            // of the cycle in hand
  // Fleet mode's rolling restarts: the cycle in hand runs under a limit (every
  // restart must hold a slot), and whether this node holds one now.
  bool gated = false, slotHeld = false;
  std::vector<std::string> unslotted;  // restarts made without a slot under a limit

  void run(Service& s) {
    s.active = s.running = true;
    s.startTick = ++tick;
    s.pid = ++pids;
    s.sinceUs = startedUs();
  }
};

class ModelSupervisor : public supervise::Supervisor {
 public:
  ModelSupervisor(World& w, Backend b) : w_(w), b_(b) {}
  std::string name() const override { return name_(); }
  std::string name_() const { return b_ == Backend::Builtin ? "builtin" : "systemd"; }

  std::map<std::string, supervise::ServiceState> observe(const std::vector<std::string>& names,
                                                         bool) override {
    std::map<std::string, supervise::ServiceState> out;
    for (const auto& n : names) {
      supervise::ServiceState st;
      if (auto it = w_.services.find(n); it != w_.services.end()) {
        const auto& s = it->second;
        st.installed = s.installed;
        st.installedText = s.installed ? s.text : "";
        st.active = s.active;
        st.running = s.running;
        st.activeState = s.running  ? "active"
                         : s.active ? "activating (auto-restart)"
                         : b_ == Backend::Systemd && ((s.failsAtStart && s.startTick) || s.limitHit)
                             ? "failed"
                             : "inactive";
        // What each backend's observe says of a service its supervisor holds down
        // (supervise/builtin/builtin.cc describe(), supervise/systemd/systemd.cc).
        if (s.active && !s.running) {
          st.held = true;
          st.heldWhy = "waiting to be restarted by Restart=";
        } else if (s.limitHit) {
          st.held = true;
          st.heldWhy = "its start limit was hit (StartLimitBurst=)";
        }
        st.pid = s.running ? s.pid : 0;
        st.sinceUs = s.sinceUs;
        st.crashRestarts = s.crashRestarts;
        st.enabled = b_ == Backend::Builtin ? true : s.enabled;
      }
      out[n] = st;
    }
    return out;
  }
  void install(const supervise::Unit& unit) override {
    auto& s = w_.services[unit.name];
    if (!s.installed || s.text != unit.text) s.installTick = ++w_.tick;
    s.installed = true;
    s.text = unit.text;
    s.failsAtStart = false;
    if (auto env = unit.service.find("Environment"); env != unit.service.end())
      for (const auto& v : env->second) s.failsAtStart |= v == "V=2";
    if (b_ == Backend::Systemd) {
      w_.reloadPending = true;
      s.enabled = true;  // [Install] WantedBy: the link made with the file
    }
  }
  void uninstall(const std::string& name) override {
    auto& s = w_.services[name];
    // "The service must be stopped first": what is not stopped runs on — under the
    // builtin backend its supervisor, under systemd the unit as loaded until a reload.
    s.installed = false;
    s.text.clear();
    s.enabled = false;
    if (b_ == Backend::Systemd) w_.reloadPending = true;
  }
  // systemd queues a start of a unit waiting in auto-restart until its back-off ends
  // (mesh-host restarts such a service for a cause); one at its start limit is
  // reset (ResetFailedUnit) and started.
  void start(const std::string& name) override {
    auto& s = runnable(name);
    if (s.active) return;
    launch(name, s);
  }
  void restart(const std::string& name) override {
    auto& s = runnable(name);
    const bool wasRunning = s.running;
    if (w_.gated && !w_.slotHeld) w_.unslotted.push_back(name);
    launch(name, s);
    if (wasRunning) {
      ++w_.restartsThisStep[name];
      w_.restartLog.push_back(name);
    }
  }
  void stop(const std::string& name) override {
    daemonReload();
    auto& s = w_.services[name];
    s.active = s.running = s.limitHit = false;
    s.pid = 0;
  }
  void reloadService(const std::string& name) override {
    auto& s = w_.services[name];
    if (!s.running) throw Error("reload of {} failed: it is not running", name);
  }
  void flush() override { daemonReload(); }
  int64_t reloadCount() const override { return w_.reloads; }
  std::vector<std::string> unsupportedKeys(const supervise::Unit&) const override { return {}; }

 private:
  void daemonReload() {
    if (b_ == Backend::Systemd && w_.reloadPending) {
      ++w_.reloads;
      w_.reloadPending = false;
    }
  }
  World::Service& runnable(const std::string& name) {
    daemonReload();
    auto& s = w_.services[name];
    if (!s.installed) throw Error("start of {} failed: the unit is not installed", name);
    if (w_.failNext > 0) {
      --w_.failNext;
      throw Error("start of {} failed: the supervisor could not start it", name);
    }
    return s;
  }
  // One rule for both backends (Supervisor::settle): the start or restart is made
  // (the job is done once the process is forked); a service that exits within its
  // settle time has failed to start, which settle() says; Restart=always then keeps
  // it in its back-off (active, not running), under either backend.
  void launch(const std::string& name, World::Service& s) {
    if (verbose())
      std::fprintf(stderr, "   [%s] launch %s%s at tick %llu\n", name_().c_str(), name.c_str(),
                   s.held() ? " (held)" : "", static_cast<unsigned long long>(w_.tick + 1));
    if (s.held()) w_.heldStarts.push_back({name, w_.tick + 1, s.meshStartTick, s.limitHit});
    s.limitHit = false;
    s.meshStartTick = w_.tick + 1;
    if (s.failsAtStart) {
      s.active = true;
      s.running = false;
      s.pid = 0;
      s.startTick = ++w_.tick;
      s.sinceUs = startedUs();  // in its back-off since
      ++s.crashRestarts;
      exited_.insert(name);
      return;
    }
    exited_.erase(name);
    w_.run(s);
    s.crashRestarts = 0;
  }

 public:
  std::map<std::string, std::string> settle(const std::vector<std::string>& names) override {
    std::map<std::string, std::string> out;
    for (const auto& n : names)
      if (exited_.erase(n)) out[n] = "exited with status 1 within 100ms of its start";
    return out;
  }

 private:
  std::set<std::string> exited_;  // started, and exited at once: for settle()
  World& w_;
  Backend b_;
};

// The drift watch as the core sees it: events on the managed paths of the
// declaration it was last updated with.
class DriftModel : public agent::DriftPort {
 public:
  std::map<std::string, std::string> drain() override { return std::exchange(pending_, {}); }
  void update(const decl::Declaration& d, const std::string&) override {
    paths_.clear();
    for (const auto& r : d.resources)
      if (!r.path().empty()) paths_[r.path()] = r.id;
  }
  size_t watched() const override { return paths_.size(); }
  size_t unwatched() const override { return 0; }
  // A path under the root changed (written, removed, mode …).
  void changed(const std::string& path) {
    for (const auto& [p, id] : paths_)
      if (path == p || path.starts_with(p + "/")) pending_.emplace(id, path);
  }
  bool any() const { return !pending_.empty(); }

 private:
  std::map<std::string, std::string> paths_;
  std::map<std::string, std::string> pending_;
};

// The fleet link as the core sees it: pushes handed over as FleetLink::consider does
// once a value is accepted, statuses captured instead of put into etcd.
class FleetModel : public agent::FleetPort {
 public:
  const std::string& declarationKey() const override { return key_; }
  std::optional<agent::AcceptedDeclaration> takeAccepted() override {
    return std::exchange(pending_, std::nullopt);
  }
  void publish(fleet::NodeStatus status) override { published.push_back(std::move(status)); }
  // As FleetLink's: none without a limit; else each restart takes a slot (`slot`, the
  // simulation's model of fleet::RestartSlots::acquire) given the agent's stop flag.
  apply::RestartGate restartGate(int64_t limit, std::chrono::milliseconds,
                                 const std::atomic<bool>* stop) override {
    if (limit <= 0) return {};
    return [this, stop](const std::string& service) { return slot(service, stop); };
  }
  std::function<apply::RestartPermit(const std::string&, const std::atomic<bool>*)> slot;
  void releaseStaleSlots() override {}

  std::optional<agent::AcceptedDeclaration> pending_;
  std::vector<fleet::NodeStatus> published;

 private:
  std::string key_ = "/mesh/sim/nodes/sim/declaration";
};

// SIGTERM in the middle of a cycle: the Nth crash point the cycle reaches.
int stopAt = 0, stopSeen = 0;
std::function<void()> onStop;
void stopHook(const char*) {
  if (stopAt > 0 && ++stopSeen == stopAt && onStop) onStop();
}

// The disk: the state directory's file system (the store's writes fail with
// SQLITE_FULL and its files' with ENOSPC: disk.hh, counted from a random write on),
// or only the root's (the managed tree under /srv: ENOSPC; the store has room).
bool treeFull = false;
int writeHook(const char* shown) {
  if (treeFull && std::string_view(shown).find("/srv/") != std::string_view::npos) return ENOSPC;
  return disk::treeWriteFault(shown);
}

struct Options {
  bool fleet = false;
  bool undeclaredCheck = true;
};

// What the operator declares: a few knobs.
struct Model {
  int a = 0, b = 0;  // file contents; p0 restarts on a
  int p0env = 0;
  bool p1 = false;
  int p1env = 0;  // 2: its program exits 1 at once
};

class System {
 public:
  System(uint64_t seed, std::string work, Backend backend, Options o)
      : seed_(seed), rng_(seed), work_(std::move(work)), backend_(backend), o_(o) {}

  std::vector<std::string> trace;  // what both backends must agree on
  int mismatches = 0;
  std::string summary;

  void run(int steps) {
    setUp();
    setCrashHook(stopHook);
    setWriteFaultHook(writeHook);
    onStop = [this] {
      if (core_) core_->terminate(SIGTERM);
    };
    fleet_.slot = [this](const std::string& service, const std::atomic<bool>* stop) {
      return slot(service, stop);
    };
    startAgent();
    settle();
    for (step_ = 1; step_ <= steps && mismatches == 0; ++step_) oneStep();
    setCrashHook(nullptr);
    setWriteFaultHook(nullptr);
    roomBack();
    disk::forget(stateDir() + "/state.db");
    onStop = nullptr;
    summary = fmt::format(
        "seed {} ({}, {}): {} steps, {} agent cycles, {} by-hand applies, {} racing the agent, "
        "{} edits, {} broken edits, {} pushes, {} SIGHUPs, {} drifts, {} SIGTERMs mid-cycle, "
        "{} unfinished cycles, {} agent restarts, {} supervisor faults, {} crashes, "
        "{} start limits, {} starts of held services (each for a cause), {} full disks, "
        "{} full trees, {} cycles that could not run, {} ENOSPC failures, "
        "{} restarts owed across a full disk paid, {} slot waits, {} SIGTERMs waiting for a "
        "slot, {} slot timeouts, {} slots taken, {} restarts owed across a slot SIGTERM paid, "
        "{} restarts each paid once, {} pauses, {} cycles that only planned, {} mismatches",
        seed_, o_.fleet ? "fleet" : "file", backend_ == Backend::Builtin ? "builtin" : "systemd",
        step_ - 1, cycles_, byHand_, racing_, edits_, broken_, pushes_, hups_, drifts_, terms_,
        interrupted_.size(), agentStarts_ - 1, supervisorFaults_, crashes_, limits_, heldStarts_,
        fullDisks_, fullTrees_, cannotRun_, enospc_, paidAfterFull_, slotWaits_, slotTerms_,
        slotTimeouts_, slotsTaken_, paidAfterSlotTerm_, restarts_, pauses_, plannedCycles_,
        mismatches);
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool chance(int percent) { return pick(100) < percent; }

  std::string stateDir() const { return root_ + "/var/lib/mesh-host"; }
  std::string declPath() const { return root_ + "/etc/mesh-host/declaration.toml"; }

  void setUp() {
    root_ = work_ + "/root";
    blobs_ = work_ + "/blobs";
    fs::create_directories(root_ + "/etc/mesh-host");
    fs::create_directories(blobs_ + "/sha256");
    bin_ = bundle({{"bin/svc", "#!/bin/sh\nexec sleep 1000\n"}});
    settings_.root = root_;
    settings_.stateDir = stateDir();
    settings_.blobs = blobs_;
    settings_.node = "sim";
    settings_.makeSupervisor = [this] {
      return std::make_unique<ModelSupervisor>(world_, backend_);
    };
    po_.node = "sim";
    po_.baseDir = root_ + "/etc/mesh-host";
    po_.stateDir = "/var/lib/mesh-host";
    opts_.declarationPath = declPath();
    opts_.settings = settings_;
    opts_.interval = 1h;
    opts_.splay = 0ms;
    opts_.load = [this](const std::string& path) { return decl::loadDeclaration(path, po_); };
    opts_.outcomeLine = [](const apply::ResourceResult& r, bool) { return r.id; };
    opts_.summaryLine = [](const apply::CycleReport& r, bool) {
      return fmt::format("cycle {}", r.cycle);
    };
    if (!o_.fleet) {
      writeDeclaration();
    } else {
      push();  // the first push, accepted before the agent starts: cached by its cycle
    }
    log_ = std::make_unique<agent::Logger>(agent::LogFormat::Text, false, verbose() ? 2 : nullFd());
  }

  static int nullFd() {
    static const int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    return fd;
  }

  std::string bundle(const std::map<std::string, std::string>& files) {
    const std::string dir = fmt::format("{}/src{}", work_, sources_++);
    for (const auto& [rel, content] : files) {
      fs::create_directories(fs::path(dir + "/" + rel).parent_path());
      std::ofstream(dir + "/" + rel) << content;
    }
    const std::string tar = dir + ".tar";
    if (std::system(fmt::format("tar -C '{}' -cf '{}' .", dir, tar).c_str()) != 0)
      throw Error("tar failed");
    const Digest d = Digest::ofFile(tar);
    fs::copy_file(tar, blobs_ + "/sha256/" + d.hex(), fs::copy_options::overwrite_existing);
    return d.str();
  }

  // The declaration of the model as it is now, version `version_`.
  std::string text() const {
    std::string t = fmt::format("# version {}\n", version_);
    if (o_.fleet)
      t += fmt::format("# max-parallel-restarts {}\nserial = {}\n", slotLimit_, version_);
    t += fmt::format("[module.s.file.a]\npath = \"/srv/s/a\"\ncontent = \"a v{}\\n\"\n", model_.a);
    t += fmt::format("[module.s.file.b]\npath = \"/srv/s/b\"\ncontent = \"b v{}\\n\"\n", model_.b);
    t += process(0, model_.p0env, "[\"s.a\"]");
    if (model_.p1) t += process(1, model_.p1env, "[]");
    return t;
  }

  std::string process(int p, int env, const char* restartOn) const {
    return fmt::format(
        "[module.s.process.p{0}]\nbundle = \"{1}\"\nservice = \"s-p{0}.service\"\n"
        "restart-on = {2}\nunit = {{ ExecStart = \"{{bundle}}/bin/svc\", Environment = "
        "[\"V={3}\"], Restart = \"always\" }}\n",
        p, bin_, restartOn, env);
  }

  // What each version declares: its services, and what changed from the version
  // before it for each service (its unit or a restart-on file).
  struct Version {
    std::set<std::string> services;
    std::string digest;
  };

  // One knob turned; a new version. Counts what it owes each service.
  void edit() {
    const Model before = model_;
    switch (pick(6)) {
      case 0:
      case 1:
        model_.a = (model_.a + 1) % 3;
        break;
      case 2:
        model_.b = (model_.b + 1) % 3;
        break;
      case 3:
        model_.p0env = (model_.p0env + 1) % 2;
        break;
      case 4:
        model_.p1 = !model_.p1;
        break;
      default:
        model_.p1env = (model_.p1env + 1 + pick(2)) % 3;
    }
    ++version_;
    ++edits_;
    if (model_.a != before.a || model_.p0env != before.p0env) ++owed_["s-p0.service"];
    if (model_.p1 && before.p1 && model_.p1env != before.p1env) ++owed_["s-p1.service"];
  }

  void writeDeclaration() {
    const std::string t = text();
    versions_[version_] = {servicesOf(t), Digest::ofBytes(t).str()};
    const std::string tmp = declPath() + ".tmp";
    std::ofstream(tmp, std::ios::trunc) << t;
    fs::rename(tmp, declPath());
  }

  std::set<std::string> servicesOf(const std::string& t) const {
    std::set<std::string> out{"s-p0.service"};
    if (t.find("[module.s.process.p1]") != std::string::npos) out.insert("s-p1.service");
    return out;
  }

  // The version a declaration text is (its first line).
  static int versionOf(const std::string& t) {
    return t.starts_with("# version ") ? std::atoi(t.c_str() + 10) : -1;
  }

  // The agent's event loop sees the file's directory change.
  void touched() {
    if (core_) core_->declarationTouched(now_);
  }

  // ---- the agent ----

  void startAgent() {
    ++agentStarts_;
    failStreak_ = 0;  // a new agent's back-off starts again
    drift_ = std::make_unique<DriftModel>();
    core_ = std::make_unique<agent::AgentCore>(opts_, *log_, notifier_, seed_ + agentStarts_);
    if (o_.fleet) core_->setFleet(&fleet_);
    core_->setDrift(drift_.get());
    if (o_.fleet) {
      std::optional<agent::AcceptedDeclaration> cached;
      try {
        if (auto store = state::Store::openIfExists(stateDir()))
          if (auto c = store->fleetDeclaration(fleet_.declarationKey()))
            cached = accepted(c->envelope, c->revision);
      } catch (const Error& e) {
        mismatch(fmt::format("the cached pushed declaration cannot be read: {}", e.what()));
      }
      core_->start(std::move(cached));
      // As FleetLink starts: what the store says was applied, published first.
      core_->lastStatus() = agent::statusFromStore(stateDir(), core_->accepted());
      fleet_.publish(core_->lastStatus());
      checkPublished();
      // The watcher reads the key: a push not yet taken in is handed over now.
      if (fleet_.pending_) core_->fleetNews();
    } else {
      core_->start(std::nullopt);
    }
  }

  // The agent exits (SIGTERM): what it clears on its way out, then systemd starts it again.
  void agentExited() {
    if (!o_.fleet) state::clearDeclarationError(stateDir());
    state::clearDriftNote(stateDir());
    state::clearPendingNote(stateDir());
    core_.reset();
    startAgent();
  }

  // Runs the agent until it has nothing left to do but wait for the interval.
  void settle() {
    for (int i = 0; i < 100; ++i) {
      if (auto job = core_->nextCycle(now_)) {
        runJob(std::move(*job));
        if (core_->done()) agentExited();
        continue;
      }
      const auto d = core_->nextDeadline();
      if (!d || *d > now_ + 5s) return;
      now_ = std::max(now_, *d);
      core_->advance(now_);
    }
    mismatch("the agent never settles (100 wake-ups in one step)");
  }

  // Snapshot of every managed path under the root: path → what it holds.
  std::map<std::string, std::string> snapshot() const {
    std::map<std::string, std::string> out;
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(root_ + "/srv", ec)) {
      struct stat st {};
      if (::lstat(e.path().c_str(), &st) != 0) continue;
      out[e.path().string().substr(root_.size())] =
          fmt::format("{}:{:o}:{}", st.st_ino, st.st_mode, st.st_mtim.tv_nsec + st.st_mtim.tv_sec);
    }
    return out;
  }

  // inotify's view of what happened between two snapshots; a change of a cause is
  // stamped `tick` (a cycle's: taken when it began, before any start it made).
  void events(const std::map<std::string, std::string>& before, uint64_t tick) {
    const auto after = snapshot();
    for (const auto& [p, s] : after)
      if (auto it = before.find(p); it == before.end() || it->second != s) noteChange(p, tick);
    for (const auto& [p, s] : before)
      if (!after.count(p)) noteChange(p, tick);
    if (drift_->any() && core_) core_->driftEvents(now_);
  }

  void noteChange(const std::string& path, uint64_t tick) {
    drift_->changed(path);
    if (path == "/srv/s/a") aChangedTick_ = tick;
  }

  void runJob(agent::CycleJob job) {
    if (raceArmed_) {
      raceArmed_ = false;
      ++racing_;
      // The cycle has its copy of the declaration and waits for the state lock: an
      // operator edits the file and applies it by hand meanwhile.
      edit();
      writeDeclaration();
      touched();
      byHandApply();
    }
    now_ += 1ms;
    // The agent's back-off of cycles that cannot run: a cycle by event (drift) waits
    // 1 s after the first failure, doubling up to the interval.
    if (failStreak_ > 0 && job.trigger.starts_with("drift: ")) {
      const auto due =
          std::min(std::chrono::duration_cast<std::chrono::milliseconds>(opts_.interval),
                   std::chrono::milliseconds(int64_t{1000} << std::min(failStreak_ - 1, 20)));
      if (now_ - lastFailAt_ < due)
        mismatch(fmt::format(
            "a drift cycle ran {} ms after the cycle that could not run ({} in a row): the "
            "agent's back-off asks for {} ms",
            std::chrono::duration_cast<std::chrono::milliseconds>(now_ - lastFailAt_).count(),
            failStreak_, due.count()));
    }
    const auto before = snapshot();
    const uint64_t began = ++world_.tick;
    world_.restartLog.clear();
    world_.gated = static_cast<bool>(job.hooks.holdRestartSlot);
    noteLimited();
    stopSeen = 0;
    stopAt = termArmed_ ? termArmed_ : 0;
    termArmed_ = 0;
    const int64_t storedBefore = storedCycles();
    const size_t publishedBefore = fleet_.published.size();
    agent::LockedRun run = agent::runLocked(
        settings_, job.declaration, core_->stopFlag(), [](const std::string&) {}, job.hooks);
    stopAt = 0;
    world_.gated = false;
    ++cycles_;
    if (job.releaseStaleSlots && run.report) fleet_.releaseStaleSlots();
    now_ += 10ms;
    const bool planned = run.report && !run.planned.empty();
    if (planned) checkPlanned(before, storedBefore, run.planned);
    if (paused_ && run.report && !planned)
      mismatch(fmt::format("the agent's cycle ({}) applied while paused", job.trigger));
    events(before, began);  // its own writes, seen while it runs
    const std::string error = run.error;
    std::optional<apply::CycleReport> report = run.report;
    core_->cycleDone(now_, std::move(run));
    if (planned) {
      // Nothing applied: no cause was paid and no clean cycle ran.
      ++plannedCycles_;
      lastAgentClean_ = false;
      failStreak_ = 0;
      if (o_.fleet) checkPublishedPlanned(publishedBefore);
      return;
    }
    if (!error.empty()) {
      ++failStreak_;
      lastFailAt_ = now_;
      couldNotRun("the agent's cycle (" + job.trigger + ")", error);
      return;
    }
    if (!report) return;
    failStreak_ = 0;
    noteCycle(*report, "agent " + job.trigger);
    if (report->interrupted) interrupted_.insert(report->cycle);
    lastAgentClean_ = !report->interrupted && !report->anyFailed();
    lastBegan_ = began;
    if (o_.fleet) checkPublished();
    checkLocal();
    checkChurn(report->cycle);
  }

  // How many cycles the store holds (-1: it cannot be read now).
  int64_t storedCycles() {
    try {
      auto store = state::Store::openIfExists(stateDir());
      return store ? store->cycleCount() : 0;
    } catch (const Error&) {
      return -1;
    }
  }

  // A cycle that only planned (paused): it changed nothing under the root, restarted
  // nothing, recorded no cycle, and left what it would do for `status`.
  void checkPlanned(const std::map<std::string, std::string>& before, int64_t storedBefore,
                    const std::string& why) {
    if (why != "paused") mismatch(fmt::format("a cycle only planned ({}) while not paused", why));
    if (!paused_) mismatch("a cycle only planned while the node was not paused");
    const auto after = snapshot();
    for (const auto& [p, st] : after)
      if (auto it = before.find(p); it == before.end() || it->second != st)
        mismatch(fmt::format("a cycle that only planned (paused) changed {}", p));
    for (const auto& [p, st] : before)
      if (!after.count(p))
        mismatch(fmt::format("a cycle that only planned (paused) removed {}", p));
    for (const auto& r : world_.restartLog)
      mismatch(fmt::format("a cycle that only planned (paused) restarted {}", r));
    if (const int64_t n = storedCycles(); storedBefore >= 0 && n >= 0 && n != storedBefore)
      mismatch(fmt::format(
          "a cycle that only planned (paused) was recorded: the store held {} cycle(s), now {}",
          storedBefore, n));
  }

  // Fleet mode: what was published after a cycle that only planned says paused, and
  // claims nothing applied that the status before it did not.
  void checkPublishedPlanned(size_t publishedBefore) {
    if (publishedBefore == 0) return;
    const auto& prev = fleet_.published[publishedBefore - 1];
    for (size_t i = publishedBefore; i < fleet_.published.size(); ++i) {
      const auto& st = fleet_.published[i];
      if (!st.paused)
        mismatch("a status published after a cycle that only planned does not say paused");
      if (st.cycle != prev.cycle || st.serial != prev.serial ||
          st.declarationDigest != prev.declarationDigest || st.generation != prev.generation)
        mismatch(fmt::format(
            "a status published after a cycle that only planned (paused) claims serial {} in "
            "cycle {} applied; before it, serial {} in cycle {}",
            st.serial.value_or(0), st.cycle, prev.serial.value_or(0), prev.cycle));
    }
    checkPublished();
  }

  // mesh-host pause / resume, as the agent's event loop sees the state directory change.
  void togglePause() {
    if (!paused_) {
      ++pauses_;
      state::writePause(stateDir(), state::pauseByMe("sim"));
    } else {
      state::removePause(stateDir());
    }
    paused_ = !paused_;
    if (core_) core_->pauseTouched();
  }

  // The services at their start limit as a cycle begins.
  void noteLimited() {
    limitedAtStart_.clear();
    for (const auto& [name, s] : world_.services)
      if (s.installed && s.limitHit) limitedAtStart_.insert(name);
  }

  // Whether the state directory's file system is full now (store writes fail).
  bool storeFull() const { return diskFull_ == Disk::Full && disk::anyWriteFailed(); }

  // A cycle (the agent's, or an apply by hand) ended with an error: only a full
  // state directory may do that. Its row, if it began one, is unfinished: no status
  // may claim it; and `status` must say the node is failing.
  void couldNotRun(const std::string& who, const std::string& error) {
    lastAgentClean_ = false;
    checkHeldStarts(who);
    if (!storeFull()) return mismatch(fmt::format("{} could not run: {}", who, error));
    ++cannotRun_;
    if (owesRestart("s-p0.service")) owedAcrossFull_ = true;
    try {
      auto store = state::Store::open(stateDir(), state::Store::Access::ReadOnly);
      if (auto c = store.lastCycle(); c && c->finishedAt == 0) interrupted_.insert(c->cycle);
    } catch (const Error& e) {
      return mismatch(fmt::format("the store cannot be read: {}", e.what()));
    }
    if (const std::string why = statusHealthy(); !why.empty())
      mismatch(fmt::format("{} could not run ({}), yet `status` says the node is healthy: {}", who,
                           error, why));
    if (o_.fleet) checkPublished();
    checkLocal();
  }

  // A restart of `name` is owed: its unit or restart-on file changed since it started.
  bool owesRestart(const std::string& name) const {
    auto it = world_.services.find(name);
    return it != world_.services.end() && it->second.installed &&
           causeTick(name) > it->second.startTick;
  }

  // `mesh-host status`'s health (cli/cmd_status.cc over apply/health.hh) of the node as
  // it is now: "" when unhealthy, else what it looked at.
  std::string statusHealthy() {
    apply::NodeHealth health;
    health.cycleError = state::lastCycleError(stateDir()).has_value();
    health.declarationError = state::declarationError(stateDir()).has_value();
    auto store = state::Store::open(stateDir(), state::Store::Access::ReadOnly);
    const auto newest = store.lastCycle();
    health.cutShort = newest && newest->finishedAt == 0;  // and no cycle runs now
    for (const auto& [id, c] :
         apply::computeChurn(store.history("", 0), newest ? newest->cycle : 0))
      health.churning += c.churning;
    for (const auto& [id, r] : store.loadRecords()) {
      std::optional<bool> running;
      if (const std::string name = serviceOf(id); !name.empty())
        running = world_.services.count(name) && world_.services.at(name).running;
      health.add(apply::resourceHealth(r.outcome, running));
    }
    if (!health.healthy()) return "";
    return fmt::format("no last error, last cycle {} finished, {} failing, {} churning",
                       newest ? newest->cycle : 0, health.failing, health.churning);
  }

  // A change that failed on a full disk (ENOSPC) and then succeeded is declared, not
  // churn: the churn `status` shows is what it would be had the failed tries never
  // been made.
  void checkChurn(int64_t cycle) {
    if (!enospcSeen_) return;
    try {
      auto store = state::Store::open(stateDir(), state::Store::Access::ReadOnly);
      const auto all = store.history("", 0);
      std::vector<state::HistoryEntry> without;
      for (const auto& h : all)
        if (h.outcome != "failed" || h.reason.find("No space left on device") == std::string::npos)
          without.push_back(h);
      const auto got = apply::computeChurn(all, cycle), want = apply::computeChurn(without, cycle);
      std::set<std::string> ids;
      for (const auto& [id, c] : got) ids.insert(id);
      for (const auto& [id, c] : want) ids.insert(id);
      for (const auto& id : ids) {
        const int g = got.count(id) ? got.at(id).changes : 0;
        const int w = want.count(id) ? want.at(id).changes : 0;
        if (g != w)
          mismatch(fmt::format(
              "{} counts {} undeclared change(s) in the churn window, {} without its writes "
              "that failed on a full disk: a change that failed on ENOSPC, then succeeded, "
              "taken for churn ({})",
              id, g, w, got.count(id) ? got.at(id).reasonText() : ""));
      }
    } catch (const Error& e) {
      mismatch(fmt::format("the store cannot be read: {}", e.what()));
    }
  }

  // `mesh-host apply` of the file as it is now, beside the agent.
  void byHandApply() {
    ++byHand_;
    const auto before = snapshot();
    const uint64_t began = ++world_.tick;
    world_.restartLog.clear();
    const auto d = decl::loadDeclaration(declPath(), po_);
    noteLimited();
    std::atomic<bool> never{false};
    agent::LockedRun run = agent::runLocked(settings_, d, never, [](const std::string&) {}, {});
    events(before, began);
    if (!run.report) return couldNotRun("the by-hand apply", run.error);
    noteCycle(*run.report, "by hand");
    if (run.report->anyFailed()) lastAgentClean_ = false;
    checkLocal();
    checkChurn(run.report->cycle);
  }

  // A cycle ran (the agent's or by hand): which version it applied, and its trace.
  void noteCycle(const apply::CycleReport& report, const std::string& who) {
    int ran = -1;
    try {
      auto store = state::Store::open(stateDir(), state::Store::Access::ReadOnly);
      if (auto c = store.lastCycle(); c && c->cycle == report.cycle)
        if (auto g = store.generationDeclaration(c->generation)) ran = versionOf(g->text);
    } catch (const Error& e) {
      return mismatch(fmt::format("the store cannot be read: {}", e.what()));
    }
    std::string line = fmt::format("step {} {} v{}:", step_, who.substr(0, who.find(':')), ran);
    for (const auto& r : report.results)
      line += fmt::format(" {}={}/{}", r.id, apply::verdictName(r.outcome.verdict()),
                          limitedAtStart_.count(serviceOf(r.id)) ? fromLimit(r.outcome.reason())
                                                                 : sameOnBoth(r.outcome.reason()));
    for (const auto& s : world_.restartLog) line += " restart " + s;
    for (const auto& r : report.results)
      if (r.outcome.verdict() == apply::Verdict::Failed &&
          r.outcome.reason().find("No space left on device") != std::string::npos) {
        ++enospc_;
        enospcSeen_ = true;
        if (owesRestart("s-p0.service")) owedAcrossFull_ = true;
      }
    if (report.interrupted) line += " (interrupted)";
    trace.push_back(line);
    if (verbose()) std::fprintf(stderr, "   %s\n", line.c_str());
    if (ran < applied_)
      mismatch(fmt::format(
          "cycle {} ({}) applied declaration version {} after version {} was applied: an "
          "older declaration over a newer one",
          report.cycle, who, ran, applied_));
    applied_ = std::max(applied_, ran);
    restarts_ += static_cast<int64_t>(world_.restartLog.size());
    checkHeld(report, who);
  }

  // The starts the cycle just ended made: each of a service held down has a cause.
  void checkHeldStarts(const std::string& cycle) {
    for (const auto& h : std::exchange(world_.heldStarts, {})) {
      ++heldStarts_;
      if (causeTick(h.name) <= h.prevMeshStart)
        mismatch(fmt::format(
            "{} started {}, which its supervisor held {}, with no cause (no change of its "
            "unit or restart-on file) since mesh-host last started it: the cycle overrode "
            "its supervisor's back-off",
            cycle, h.name, h.limit ? "at its start limit" : "in its Restart= back-off"));
    }
    if (!world_.unslotted.empty())
      mismatch(fmt::format("{} restarted {} without a restart slot, under a limit of 1", cycle,
                           world_.unslotted.front()));
    world_.unslotted.clear();
    if (world_.slotHeld) mismatch(fmt::format("{} ended holding a restart slot", cycle));
    world_.slotHeld = false;
  }

  // What a held service is held in is each backend's own words (systemd's start limit,
  // the builtin supervisor's back-off at its cap): the outcome both must give is that
  // it is failing and was not started.
  static std::string sameOnBoth(const std::string& reason) {
    static const std::string left = "; left to its supervisor, not started";
    const size_t colon = reason.find(" is not running: ");
    if (colon == std::string::npos || !reason.ends_with(left)) return reason;
    return reason.substr(0, colon) + " is not running: held by its supervisor" + left;
  }

  // A service at its start limit when the cycle began is inactive under systemd (a
  // cause starts it: "drift: not running", "start of …") and in its back-off under the
  // builtin supervisor (a cause restarts it: "restart-on s.a", "restart of …"): the
  // same outcome, a start for a cause, in each backend's words.
  static std::string fromLimit(const std::string& reason) {
    if (reason.ends_with("; left to its supervisor, not started")) return sameOnBoth(reason);
    if (const size_t at = reason.find(" failed: "); at != std::string::npos)
      return "started from its start limit, failed: " + reason.substr(at + 9);
    return "started from its start limit";
  }

  static std::string serviceOf(const std::string& id) {
    return id == "s.p0" ? "s-p0.service" : id == "s.p1" ? "s-p1.service" : "";
  }

  // The tick of the newest cause to start or restart `name`: its unit changed, or
  // (s-p0) its restart-on file s.a did.
  uint64_t causeTick(const std::string& name) const {
    uint64_t t = 0;
    if (auto it = world_.services.find(name); it != world_.services.end())
      t = it->second.installTick;
    if (name == "s-p0.service") t = std::max(t, aChangedTick_);
    return t;
  }

  // A crash loop is its supervisor's: no cycle starts or restarts a service its
  // supervisor holds (in its Restart= back-off, or at its start limit) unless the
  // cycle owes it a cause since mesh-host last started it; and a service held down is
  // reported failing, never unchanged (or created, updated) as if it ran.
  void checkHeld(const apply::CycleReport& report, const std::string& who) {
    checkHeldStarts(fmt::format("cycle {} ({})", report.cycle, who));
    for (const auto& r : report.results) {
      const std::string name = serviceOf(r.id);
      const auto it = world_.services.find(name);
      if (name.empty() || it == world_.services.end() || !it->second.held()) continue;
      const auto v = r.outcome.verdict();
      if (v == apply::Verdict::Failed || v == apply::Verdict::Skipped ||
          v == apply::Verdict::Removed)
        continue;
      mismatch(fmt::format(
          "cycle {} ({}) reports {} {} ({}) while its supervisor holds {} {}: a crash loop "
          "shown as healthy",
          report.cycle, who, r.id, apply::verdictName(v), r.outcome.reason(), name,
          it->second.limitHit ? "at its start limit" : "in its Restart= back-off"));
    }
  }

  // ---- the checks ----

  // No status the store gives claims a cycle that did not finish.
  void checkLocal() {
    try {
      auto store = state::Store::open(stateDir(), state::Store::Access::ReadOnly);
      if (auto last = store.lastFinishedCycle(); last && interrupted_.count(last->cycle))
        mismatch(fmt::format(
            "the store records interrupted cycle {} as finished (status shows it as the last "
            "cycle, applied at {})",
            last->cycle, last->finishedAt));
      for (const auto& g : store.generations())
        if (g.lastCycle && interrupted_.count(g.lastCycle))
          mismatch(fmt::format("generation {} shows interrupted cycle {} as its last finished one",
                               g.generation, g.lastCycle));
    } catch (const Error& e) {
      mismatch(fmt::format("the store cannot be read: {}", e.what()));
    }
  }

  // No published status claims a cycle that did not finish, or a declaration its
  // cycle did not finish applying.
  void checkPublished() {
    for (; checkedStatuses_ < fleet_.published.size(); ++checkedStatuses_) {
      const auto& s = fleet_.published[checkedStatuses_];
      if (s.cycle > 0 && interrupted_.count(s.cycle))
        mismatch(fmt::format(
            "published status claims serial {} applied in cycle {}, which was interrupted "
            "({} created, {} updated, {} unchanged)",
            s.serial.value_or(0), s.cycle, s.created, s.updated, s.unchanged));
      if (s.appliedCycle && interrupted_.count(s.appliedCycle->cycle))
        mismatch(fmt::format("published status names interrupted cycle {} as the applying one",
                             s.appliedCycle->cycle));
    }
  }

  void checkStep() {
    // Each cause paid once: restarts in this step, at most the changes owed and not
    // yet paid (a repair backed off may pay a drift steps later).
    for (const auto& [service, n] : world_.restartsThisStep) {
      const int owed = owed_[service];
      if (n > owed)
        mismatch(
            fmt::format("{} restarted {} times in one step, owed {} restart(s)", service, n, owed));
      owed_[service] = std::max(0, owed - n);
    }
    if (!lastAgentClean_ || !core_ || core_->running()) return;
    const auto vIt = versions_.find(applied_);
    if (vIt == versions_.end()) return;
    const auto& declared = vIt->second.services;
    for (const auto& [name, s] : world_.services) {
      if (o_.undeclaredCheck && !declared.count(name) && (s.installed || s.active))
        mismatch(fmt::format(
            "{} is not declared (version {}) but is {}{}: mesh-host lost what it installed", name,
            applied_, s.installed ? "installed" : "not installed",
            s.active ? (s.running ? " and running" : " and restarting (Restart=)") : ""));
      if (declared.count(name) && s.running) {
        if (s.installTick > s.startTick)
          mismatch(fmt::format("{} runs an old unit: its restart was lost", name));
        // (A drift the agent has not repaired yet, its repair backed off, is not owed yet.)
        if (name == "s-p0.service" && aChangedTick_ > s.startTick && aChangedTick_ <= lastBegan_)
          mismatch(fmt::format("{} did not restart after s.a changed: the restart was lost", name));
        // Paid: started after every change of its unit and causes (a drift not repaired
        // yet stays owed).
        if (name != "s-p0.service" || aChangedTick_ <= lastBegan_) owed_[name] = 0;
        // A restart owed when SIGTERM came while it waited for its restart slot.
        if (auto t = owedAtSlotTerm_.find(name); t != owedAtSlotTerm_.end()) {
          if (s.startTick <= t->second && causeTick(name) <= t->second)
            mismatch(fmt::format(
                "{} was owed a restart when SIGTERM came while it waited for its restart slot; "
                "a clean cycle since has not made it: the restart was lost",
                name));
          else
            ++paidAfterSlotTerm_;
          owedAtSlotTerm_.erase(t);
        }
      }
    }
    // A restart owed when the disk filled, made once there is room again (once: the
    // count of restarts in a step is checked above).
    if (owedAcrossFull_ && diskFull_ == Disk::Room) {
      owedAcrossFull_ = false;
      if (owesRestart("s-p0.service"))
        mismatch(
            "s-p0.service was owed a restart when the disk filled; a clean cycle since "
            "room came back has not made it: the restart was lost");
      else
        ++paidAfterFull_;
    }
  }

  // ---- the steps ----

  void oneStep() {
    world_.restartsThisStep.clear();
    {
      const int s = pick(20);
      slotPlan_ = s < 4   ? SlotPlan::Busy
                  : s < 6 ? SlotPlan::Term
                  : s < 7 ? SlotPlan::Timeout
                          : SlotPlan::Free;
    }
    if (diskFull_ != Disk::Room && chance(30)) roomBack();  // room is made
    const int r = pick(100);
    if (verbose()) std::fprintf(stderr, "-- step %d (%d)\n", step_, r);
    if (r < 30) {
      if (o_.fleet)
        push();
      else {
        edit();
        writeDeclaration();
        touched();
      }
    } else if (r < 38 && !o_.fleet) {
      edit();
      writeDeclaration();
      touched();
      byHandApply();
    } else if (r < 46 && !o_.fleet) {
      raceArmed_ = true;
      ++hups_;
      core_->hangup();
    } else if (r < 50) {
      ++hups_;
      core_->hangup();
    } else if (r < 60) {
      drift();
    } else if (r < 68) {
      // SIGTERM while the cycle of an edit runs.
      ++terms_;
      termArmed_ = 1 + pick(4);
      if (o_.fleet)
        push();
      else {
        edit();
        writeDeclaration();
        touched();
      }
    } else if (r < 73) {
      // The interval passes.
      if (auto d = core_->nextDeadline()) now_ = std::max(now_, *d);
      core_->advance(now_);
    } else if (r < 77 && !o_.fleet) {
      ++broken_;
      std::ofstream(declPath(), std::ios::trunc) << "[module.s.file.a\npath = \n";
      touched();
    } else if (r < 82) {
      ++supervisorFaults_;
      world_.failNext = 1;
      core_->hangup();
    } else if (r < 86) {
      crash();
    } else if (r < 89) {
      recover();
    } else if (r < 92) {
      limit();
    } else if (r < 95) {
      if (diskFull_ == Disk::Room) fillDisk();
    } else if (r < 98) {
      togglePause();
    }  // else: nothing happens
    now_ += 10ms;
    core_->advance(now_);
    settle();
    world_.failNext = 0;
    checkStep();
  }

  // fleet::RestartSlots::acquire as the cycle meets it: the first restart of a running
  // service in a step meets the step's plan — the slot free; held by another node,
  // then freed; held while SIGTERM comes (the event loop sets the stop flag, and the
  // wait gives up soon after, as acquire does); or held past the timeout. (Drawn for
  // a running service only: a restart both backends' models make alike.)
  apply::RestartPermit slot(const std::string& service, const std::atomic<bool>* stop) {
    auto it = world_.services.find(service);
    const bool running = it != world_.services.end() && it->second.running;
    const SlotPlan plan = running ? std::exchange(slotPlan_, SlotPlan::Free) : SlotPlan::Free;
    if (world_.slotHeld) mismatch("a cycle asks for a second restart slot while it holds one");
    switch (plan) {
      case SlotPlan::Busy:
        ++slotWaits_;  // another node restarts it; the slot is freed; then it is ours
        break;
      case SlotPlan::Term:
        ++slotTerms_;
        if (core_) core_->terminate(SIGTERM);
        if (!stop || !stop->load())
          mismatch(fmt::format(
              "SIGTERM while the restart of {} waits for its slot: the wait does not see the "
              "agent's stop flag (it would wait out its timeout)",
              service));
        owedAtSlotTerm_[service] = world_.tick;
        throw Error("no restart slot for {} within 30s: stopping", service);
      case SlotPlan::Timeout:
        ++slotTimeouts_;
        throw Error("no restart slot for {} within 30s: every slot is taken", service);
      case SlotPlan::Free:
        break;
    }
    ++slotsTaken_;
    world_.slotHeld = true;
    return apply::RestartPermit([this] { world_.slotHeld = false; });
  }

  // The state directory's file system fills (store and files, from a random write
  // of the cycles to come on), or only the root's (the managed files).
  void fillDisk() {
    if (chance(50)) {
      ++fullDisks_;
      diskFull_ = Disk::Full;
      disk::failWritesFrom(1 + pick(30));
    } else {
      ++fullTrees_;
      diskFull_ = Disk::TreeFull;
      treeFull = true;
    }
  }

  void roomBack() {
    diskFull_ = Disk::Room;
    disk::failWritesFrom(0);
    treeFull = false;
  }

  // Someone changes a managed file behind mesh-host's back.
  void drift() {
    ++drifts_;
    const std::string f = chance(50) ? "/srv/s/a" : "/srv/s/b";
    std::error_code ec;
    if (!fs::exists(root_ + f, ec)) return;
    const auto before = snapshot();
    std::ofstream(root_ + f, std::ios::trunc) << "drifted\n";
    if (f == "/srv/s/a") ++owed_["s-p0.service"];
    events(before, ++world_.tick);
  }

  // A running service crashes: Restart= brings it back after its back-off.
  void crash() {
    for (auto& [name, s] : world_.services)
      if (s.running && chance(50)) {
        ++crashes_;
        s.running = false;
        s.pid = 0;
        ++s.crashRestarts;
      }
  }

  // The back-off ends: the supervisor starts the service again (one at its start
  // limit stays down; one whose program exits at once goes on crash-looping).
  void recover() {
    for (auto& [name, s] : world_.services)
      if (s.active && !s.running && !s.failsAtStart && !s.limitHit) world_.run(s);
  }

  // A service crash-looping in its back-off reaches its start limit: systemd gives up
  // (failed, Result=start-limit-hit); the builtin supervisor, which has no start
  // limit, waits at its back-off's cap. Held down either way, for longer than the
  // simulation looks.
  void limit() {
    for (auto& [name, s] : world_.services)
      if (s.installed && s.active && !s.running && !s.limitHit && chance(70)) {
        ++limits_;
        s.limitHit = true;
        if (backend_ == Backend::Systemd) s.active = false;
      }
  }

  // A push arrives through the feed: accepted, handed to the agent.
  void push() {
    edit();
    ++pushes_;
    slotLimit_ = pick(4) == 0 ? 0 : 1;
    const std::string t = text();
    versions_[version_] = {servicesOf(t), Digest::ofBytes(t).str()};
    fleet_.pending_ = accepted(t, ++revision_);
    if (core_) core_->fleetNews();
  }

  agent::AcceptedDeclaration accepted(const std::string& t, int64_t revision) {
    agent::AcceptedDeclaration a{decl::parseDeclaration(t, "etcd", po_), t, revision, 0, {}};
    // The signed statement's --max-parallel-restarts, carried in the text here.
    if (const size_t at = t.find("# max-parallel-restarts "); at != std::string::npos)
      a.maxParallelRestarts = std::atoi(t.c_str() + at + 24);
    return a;
  }

  void mismatch(const std::string& what) {
    ++mismatches;
    std::fprintf(stderr,
                 "MISMATCH at seed %llu step %d (%s, %s): %s\n  replay: mesh_sim_system --seed "
                 "%llu --steps %d%s\n",
                 static_cast<unsigned long long>(seed_), step_, o_.fleet ? "fleet" : "file",
                 backend_ == Backend::Builtin ? "builtin" : "systemd", what.c_str(),
                 static_cast<unsigned long long>(seed_), step_, o_.fleet ? " --fleet" : "");
  }

  uint64_t seed_;
  std::mt19937_64 rng_;
  std::string work_, root_, blobs_, bin_;
  Backend backend_;
  Options o_;
  int sources_ = 0;
  apply::Settings settings_;
  decl::ParseOptions po_;
  agent::AgentOptions opts_;
  std::unique_ptr<agent::Logger> log_;
  agent::Notifier notifier_;
  std::unique_ptr<agent::AgentCore> core_;
  std::unique_ptr<DriftModel> drift_;
  FleetModel fleet_;
  World world_;
  Model model_;
  int version_ = 1;
  int64_t revision_ = 0;
  std::map<int, Version> versions_;
  int applied_ = 0;  // the newest version any cycle applied
  std::set<int64_t> interrupted_;
  size_t checkedStatuses_ = 0;
  std::map<std::string, int> owed_;  // service → restarts owed and not yet paid
  uint64_t aChangedTick_ = 0;
  bool lastAgentClean_ = false;
  uint64_t lastBegan_ = 0;  // the tick the last agent cycle began at
  bool raceArmed_ = false;
  int termArmed_ = 0;
  Clock::time_point now_{std::chrono::hours(1)};
  enum class Disk { Room, Full, TreeFull };
  Disk diskFull_ = Disk::Room;
  enum class SlotPlan { Free, Busy, Term, Timeout };
  SlotPlan slotPlan_ = SlotPlan::Free;
  std::set<std::string> limitedAtStart_;  // of the cycle in hand
  int slotLimit_ = 1;  // fleet mode: the pushed statement's --max-parallel-restarts
  std::map<std::string, uint64_t> owedAtSlotTerm_;  // service → the tick of that SIGTERM
  bool owedAcrossFull_ = false, enospcSeen_ = false;
  int failStreak_ = 0;  // the agent's cycles in a row that could not run
  Clock::time_point lastFailAt_{};
  int limits_ = 0, heldStarts_ = 0, fullDisks_ = 0, fullTrees_ = 0, cannotRun_ = 0, enospc_ = 0,
      paidAfterFull_ = 0, slotWaits_ = 0, slotTerms_ = 0, slotTimeouts_ = 0, slotsTaken_ = 0,
      paidAfterSlotTerm_ = 0;
  int step_ = 0, cycles_ = 0, byHand_ = 0, racing_ = 0, edits_ = 0, broken_ = 0, pushes_ = 0,
      hups_ = 0, drifts_ = 0, terms_ = 0, agentStarts_ = 0, supervisorFaults_ = 0, crashes_ = 0;
  int pauses_ = 0, plannedCycles_ = 0;
  bool paused_ = false;  // mesh-host pause is in force
  int64_t restarts_ = 0;
};

std::string makeWork() {
  const char* base = std::getenv("MESH_SIM_DIR");
  std::string tmpl =
      fmt::format("{}/mesh-sim-system.XXXXXX",
                  base ? base : (fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp"));
  return ::mkdtemp(tmpl.data());
}

// One seed on both backends; their traces compared.
int runSeed(uint64_t seed, int steps, const Options& o) {
  std::vector<std::string> traces[2];
  int failed = 0;
  for (int b = 0; b < 2; ++b) {
    const std::string work = makeWork();
    System s(seed, work, b == 0 ? Backend::Builtin : Backend::Systemd, o);
    try {
      s.run(steps);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "MISMATCH at seed %llu: the simulation threw: %s\n",
                   static_cast<unsigned long long>(seed), e.what());
      ++s.mismatches;
    }
    std::printf("%s\n", s.summary.c_str());
    traces[b] = std::move(s.trace);
    failed |= s.mismatches != 0;
    if (s.mismatches == 0 && !std::getenv("MESH_SIM_KEEP")) fs::remove_all(work);
  }
  if (!failed) {
    const size_t n = std::min(traces[0].size(), traces[1].size());
    for (size_t i = 0; i < n; ++i)
      if (traces[0][i] != traces[1][i]) {
        std::fprintf(stderr,
                     "MISMATCH at seed %llu (%s): the backends' models differ:\n  builtin: %s\n  "
                     "systemd: %s\n",
                     static_cast<unsigned long long>(seed), o.fleet ? "fleet" : "file",
                     traces[0][i].c_str(), traces[1][i].c_str());
        return 1;
      }
    if (traces[0].size() != traces[1].size()) {
      std::fprintf(stderr, "MISMATCH at seed %llu: the backends ran %zu and %zu cycles\n",
                   static_cast<unsigned long long>(seed), traces[0].size(), traces[1].size());
      return 1;
    }
  }
  return failed;
}

}  // namespace
}  // namespace mesh::sim

int main(int argc, char** argv) {
  mesh::sim::disk::install();
  mesh::sim::disk::keepImages(false);  // a full disk only: no OS crash is played here
  uint64_t seed = 1;
  int steps = 300, seeds = 1;
  mesh::sim::Options o;
  bool both = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seed" && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--steps" && i + 1 < argc)
      steps = std::atoi(argv[++i]);
    else if (a == "--seeds" && i + 1 < argc)
      seeds = std::atoi(argv[++i]);
    else if (a == "--fleet")
      o.fleet = true, both = false;
    else if (a == "--file")
      o.fleet = false, both = false;
    else if (a == "--no-undeclared-check")
      o.undeclaredCheck = false;
    else {
      std::fprintf(stderr,
                   "usage: mesh_sim_system [--seed S] [--steps N] [--seeds K] [--file|--fleet] "
                   "[--no-undeclared-check]\n");
      return 2;
    }
  }
  int failed = 0;
  for (int k = 0; k < seeds; ++k)
    for (int m = 0; m < (both ? 2 : 1); ++m) {
      mesh::sim::Options mo = o;
      if (both) mo.fleet = m == 1;
      failed |= mesh::sim::runSeed(seed + static_cast<uint64_t>(k), steps, mo);
    }
  return failed;
}
