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
//   - SIGTERM in the middle of a cycle (the stop flag set at the cycle's Nth crash
//     point, as the event loop sets it while the cycle's thread runs), after which
//     the agent exits and a new one starts, as systemd restarts it;
//   - fleet mode: a push arriving, as an accepted declaration handed to the agent
//     through the path FleetLink's accept takes (takeAccepted), its published
//     statuses captured in memory;
//   - a supervisor event: the next start fails, a running service crashes and
//     waits in its Restart= back-off, the back-off ends; and a declaration whose
//     service exits at once when started (a start that fails at once).
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
#include "decl/parse.hh"
#include "state/drift_note.hh"
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

int64_t nowUs() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
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
  };
  std::map<std::string, Service> services;
  uint64_t tick = 0;
  int pids = 100;
  int failNext = 0;            // the next N starts/restarts fail
  int64_t reloads = 0;         // systemd: daemon-reloads
  bool reloadPending = false;  // systemd: a unit file changed since the last reload
  std::map<std::string, int> restartsThisStep;  // mesh-host's restarts of a running service
  std::vector<std::string> restartLog;          // of the cycle in hand

  void run(Service& s) {
    s.active = s.running = true;
    s.startTick = ++tick;
    s.pid = ++pids;
    s.sinceUs = nowUs();
  }
};

class ModelSupervisor : public supervise::Supervisor {
 public:
  ModelSupervisor(World& w, Backend b) : w_(w), b_(b) {}
  std::string name() const override { return b_ == Backend::Builtin ? "builtin" : "systemd"; }

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
                         : b_ == Backend::Systemd && s.failsAtStart && s.startTick ? "failed"
                                                                                   : "inactive";
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
  void start(const std::string& name) override {
    auto& s = runnable(name);
    if (s.active) return;
    launch(name, s);
  }
  void restart(const std::string& name) override {
    auto& s = runnable(name);
    const bool wasRunning = s.running;
    launch(name, s);
    if (wasRunning) {
      ++w_.restartsThisStep[name];
      w_.restartLog.push_back(name);
    }
  }
  void stop(const std::string& name) override {
    daemonReload();
    auto& s = w_.services[name];
    s.active = s.running = false;
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
  // One rule for both backends: a service that exits within its settle time has
  // failed to start; Restart=always then keeps it in its back-off (active, not
  // running), under either backend.
  void launch(const std::string& name, World::Service& s) {
    if (s.failsAtStart) {
      s.active = true;
      s.running = false;
      s.pid = 0;
      s.startTick = ++w_.tick;
      ++s.crashRestarts;
      throw Error("start of {} failed: exit-code (status 1)", name);
    }
    w_.run(s);
    s.crashRestarts = 0;
  }
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
  apply::RestartGate restartGate(int64_t, std::chrono::milliseconds,
                                 const std::atomic<bool>*) override {
    return {};
  }
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
    onStop = [this] {
      if (core_) core_->terminate(SIGTERM);
    };
    startAgent();
    settle();
    for (step_ = 1; step_ <= steps && mismatches == 0; ++step_) oneStep();
    setCrashHook(nullptr);
    onStop = nullptr;
    summary = fmt::format(
        "seed {} ({}, {}): {} steps, {} agent cycles, {} by-hand applies, {} racing the agent, "
        "{} edits, {} broken edits, {} pushes, {} SIGHUPs, {} drifts, {} SIGTERMs mid-cycle, "
        "{} interrupted cycles, {} agent restarts, {} supervisor faults, {} crashes, "
        "{} restarts each paid once, {} mismatches",
        seed_, o_.fleet ? "fleet" : "file", backend_ == Backend::Builtin ? "builtin" : "systemd",
        step_ - 1, cycles_, byHand_, racing_, edits_, broken_, pushes_, hups_, drifts_, terms_,
        interrupted_.size(), agentStarts_ - 1, supervisorFaults_, crashes_, restarts_, mismatches);
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
    opts_.outcomeLine = [](const apply::ResourceResult& r) { return r.id; };
    opts_.summaryLine = [](const apply::CycleReport& r) {
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
    if (o_.fleet) t += fmt::format("serial = {}\n", version_);
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
    const auto before = snapshot();
    const uint64_t began = ++world_.tick;
    world_.restartLog.clear();
    stopSeen = 0;
    stopAt = termArmed_ ? termArmed_ : 0;
    termArmed_ = 0;
    agent::LockedRun run = agent::runLocked(
        settings_, job.declaration, core_->stopFlag(), [](const std::string&) {}, job.hooks);
    stopAt = 0;
    ++cycles_;
    if (job.releaseStaleSlots && run.report) fleet_.releaseStaleSlots();
    now_ += 10ms;
    events(before, began);  // its own writes, seen while it runs
    if (!run.error.empty()) mismatch("the agent's cycle could not run: " + run.error);
    std::optional<apply::CycleReport> report = run.report;
    core_->cycleDone(now_, std::move(run));
    if (!report) return;
    noteCycle(*report, "agent " + job.trigger);
    if (report->interrupted) interrupted_.insert(report->cycle);
    lastAgentClean_ = !report->interrupted && !report->anyFailed();
    lastBegan_ = began;
    if (o_.fleet) checkPublished();
    checkLocal();
  }

  // `mesh-host apply` of the file as it is now, beside the agent.
  void byHandApply() {
    ++byHand_;
    const auto before = snapshot();
    const uint64_t began = ++world_.tick;
    world_.restartLog.clear();
    const auto d = decl::loadDeclaration(declPath(), po_);
    std::atomic<bool> never{false};
    agent::LockedRun run = agent::runLocked(settings_, d, never, [](const std::string&) {}, {});
    if (!run.report) return mismatch("the by-hand apply could not run: " + run.error);
    events(before, began);
    noteCycle(*run.report, "by hand");
    checkLocal();
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
                          r.outcome.reason());
    for (const auto& s : world_.restartLog) line += " restart " + s;
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
      }
    }
  }

  // ---- the steps ----

  void oneStep() {
    world_.restartsThisStep.clear();
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
    } else if (r < 88) {
      crash();
    } else if (r < 92) {
      recover();
    }  // else: nothing happens
    now_ += 10ms;
    core_->advance(now_);
    settle();
    world_.failNext = 0;
    checkStep();
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

  void recover() {
    for (auto& [name, s] : world_.services)
      if (s.active && !s.running && !s.failsAtStart) world_.run(s);
  }

  // A push arrives through the feed: accepted, handed to the agent.
  void push() {
    edit();
    ++pushes_;
    const std::string t = text();
    versions_[version_] = {servicesOf(t), Digest::ofBytes(t).str()};
    fleet_.pending_ = accepted(t, ++revision_);
    if (core_) core_->fleetNews();
  }

  agent::AcceptedDeclaration accepted(const std::string& t, int64_t revision) {
    agent::AcceptedDeclaration a{decl::parseDeclaration(t, "etcd", po_), t, revision, 0, {}};
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
  int step_ = 0, cycles_ = 0, byHand_ = 0, racing_ = 0, edits_ = 0, broken_ = 0, pushes_ = 0,
      hups_ = 0, drifts_ = 0, terms_ = 0, agentStarts_ = 0, supervisorFaults_ = 0, crashes_ = 0;
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
