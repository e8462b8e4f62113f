// The deterministic fault simulation: the oracle every change runs against.
//
// One seeded driver runs cycles in-process (the real apply code, a real temp
// tree, a real SQLite store) with a recording supervisor backend, drawing each
// step from: declaration edits (content, modes, bundles, unit keys, restart-on
// edges, resources added, removed, moved, kind-changed), outside drift, a crash
// at any crash point of a cycle, a lost store, a failing supervisor. After every
// step it checks, from what it saw alone:
//   - every restart has a cause: since the service's previous start, one of its
//     restart-on resources changed on disk, or its own unit did;
//   - every cause is paid: after a cycle that ran through without a failure,
//     every running service started after the last change of each of its causes
//     and of its unit (so at most one cycle late after a crash);
//   - unchanged resources are untouched (inode, mtime, mode);
//   - every record of a resource that did not fail carries its digest;
//   - nothing is written outside the root;
//   - a cycle with nothing to do does nothing (no writes, no supervisor calls).
// A mismatch prints the seed and step; `mesh_sim --seed S --steps N` replays it.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "apply/reconcile.hh"
#include "decl/parse.hh"
#include "state/store.hh"
#include "util/digest.hh"
#include "util/error.hh"
#include "util/faults.hh"

namespace mesh::sim {
namespace {

namespace fs = std::filesystem;

// Thrown from the crash hook: not a mesh::Error, so no cycle catches it — the
// cycle ends where it stands, its open transaction rolled back, as a kill would.
struct SimulatedCrash {};
int crashAt = 0;  // the Nth crash point of the running cycle crashes; 0: none
int crashSeen = 0;
void crashHook(const char*) {
  if (crashAt > 0 && ++crashSeen == crashAt) throw SimulatedCrash{};
}

int64_t nowUs() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

// The service manager of the simulated machine: survives every crash of the
// agent. Each start is stamped with a logical tick and a wall time in a later
// millisecond than any restart owed before it (as a real start takes time).
struct World {
  struct Service {
    bool installed = false, active = false;
    std::string text;
    int64_t sinceUs = 0;
    uint64_t startTick = 0;
    int pid = 0;
  };
  std::map<std::string, Service> services;
  std::map<std::string, uint64_t> installTick;  // last change of the unit text
  struct Restart {
    std::string service;
    uint64_t prevStart = 0, tick = 0;
  };
  std::vector<Restart> restarts;  // of the cycle in hand
  uint64_t tick = 0;
  int pids = 100;
  int failNext = 0;  // the next N starts/restarts fail
  int64_t calls = 0;

  void startNow(Service& s) {
    const int64_t ms = nowUs() / 1000;
    while (nowUs() / 1000 == ms) {
    }
    s.active = true;
    s.sinceUs = nowUs();
    s.startTick = ++tick;
    s.pid = ++pids;
  }
};

class RecordingSupervisor : public supervise::Supervisor {
 public:
  explicit RecordingSupervisor(World& w) : w_(w) {}
  std::string name() const override { return "sim"; }
  std::map<std::string, supervise::ServiceState> observe(const std::vector<std::string>& names,
                                                         bool) override {
    std::map<std::string, supervise::ServiceState> out;
    for (const auto& n : names) {
      const auto& s = w_.services[n];
      supervise::ServiceState st;
      st.installed = s.installed;
      st.installedText = s.text;
      st.active = s.active;
      st.activeState = s.active ? "active" : "inactive";
      st.pid = s.active ? s.pid : 0;
      st.sinceUs = s.active ? s.sinceUs : 0;
      out[n] = st;
    }
    return out;
  }
  void install(const supervise::Unit& unit) override {
    ++w_.calls;
    auto& s = w_.services[unit.name];
    if (!s.installed || s.text != unit.text) w_.installTick[unit.name] = ++w_.tick;
    s.installed = true;
    s.text = unit.text;
  }
  void uninstall(const std::string& name) override {
    ++w_.calls;
    w_.services[name].installed = false;
    w_.services[name].text.clear();
  }
  void start(const std::string& name) override {
    ++w_.calls;
    auto& s = running(name);
    if (!s.active) w_.startNow(s);
  }
  void restart(const std::string& name) override {
    ++w_.calls;
    auto& s = running(name);
    const uint64_t prev = s.active ? s.startTick : 0;
    w_.startNow(s);
    if (prev) w_.restarts.push_back({name, prev, s.startTick});
  }
  void stop(const std::string& name) override {
    ++w_.calls;
    w_.services[name].active = false;
  }
  std::vector<std::string> unsupportedKeys(const supervise::Unit&) const override { return {}; }

 private:
  World::Service& running(const std::string& name) {
    auto& s = w_.services[name];
    if (!s.installed) throw Error("sim: {} is not installed", name);
    if (w_.failNext > 0) {
      --w_.failNext;
      throw Error("sim: the supervisor failed to start {}", name);
    }
    return s;
  }
  World& w_;
};

// What the operator declares, as a few knobs the driver turns.
struct Model {
  static constexpr int kFiles = 4;
  struct File {
    bool present = true;
    int content = 0, mode = 0, dir = 0;
    int kind = 0;  // slot 3 only: 0 file, 1 directory, 2 link
  } files[kFiles];
  bool credPresent = true;
  int secret = 0;
  bool archivePresent = true;
  int site = 0;
  struct Process {
    bool present = true;
    int bundle = 0, env = 0;
    unsigned restartOn = 0;  // bits: f0 f1 f2 cred archive
  } procs[2] = {{true, 0, 0, 0b11001}, {true, 1, 0, 0b00110}};
};

const char* kCauses[] = {"s.f0", "s.f1", "s.f2", "s.cred", "s.site"};

class Sim {
 public:
  Sim(uint64_t seed, std::string work) : seed_(seed), rng_(seed), work_(std::move(work)) {}

  int run(int steps) {
    setUp();
    setCrashHook(crashHook);
    for (step_ = 1; step_ <= steps && mismatches_ == 0; ++step_) oneStep();
    setCrashHook(nullptr);
    std::printf(
        "seed %llu: %d steps, %d cycles (%d clean), %d crashes, %d lost stores, %d supervisor "
        "faults, %d drifts, %llu restarts (each with a cause), %d causes owed and paid, "
        "mismatches: %d\n",
        static_cast<unsigned long long>(seed_), step_ - 1, cycles_, cleanCycles_, crashes_,
        lostStores_,
        supervisorFaults_, drifts_, static_cast<unsigned long long>(restarts_), paid_, mismatches_);
    return mismatches_ == 0 ? 0 : 1;
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool chance(int percent) { return pick(100) < percent; }

  void setUp() {
    root_ = work_ + "/root";
    outside_ = work_ + "/outside";
    blobs_ = work_ + "/blobs";
    fs::create_directories(root_);
    fs::create_directories(blobs_ + "/sha256");
    fs::create_directories(outside_ + "/etc");
    std::ofstream(outside_ + "/etc/passwd") << "root:x:0:0\n";
    for (int v = 0; v < 3; ++v)
      sites_.push_back(bundle({{"index.html", fmt::format("site v{}", v)}}));
    for (int v = 0; v < 2; ++v)
      bins_.push_back(bundle({{"bin/svc", fmt::format("#!/bin/sh\n# v{}\n", v)}}));
    outsideBefore_ = snapshot(outside_);
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
    fs::copy_file(tar, blobs_ + "/sha256/" + d.hex());
    return d.str();
  }

  std::string filePath(int i) const {
    return fmt::format("/srv/s/{}/f{}", model_.files[i].dir ? "b" : "a", i);
  }

  std::string text() const {
    std::string t;
    for (int i = 0; i < Model::kFiles; ++i) {
      const auto& f = model_.files[i];
      if (!f.present) continue;
      if (f.kind == 1)
        t += fmt::format("[module.s.directory.f{}]\npath = \"{}\"\nmode = \"07{}5\"\n", i,
                         filePath(i), f.mode ? 0 : 5);
      else if (f.kind == 2)
        t += fmt::format("[module.s.link.f{}]\npath = \"{}\"\ntarget = \"t{}\"\n", i, filePath(i),
                         f.content);
      else
        t += fmt::format(
            "[module.s.file.f{}]\npath = \"{}\"\ncontent = \"f{} v{}\\n\"\nmode = \"06{}4\"\n", i,
            filePath(i), i, f.content, f.mode ? 0 : 4);
    }
    if (model_.credPresent)
      t += fmt::format(
          "[module.s.credential.cred]\npath = \"/srv/s/secret\"\nfrom = \"{}/secret\"\n", work_);
    if (model_.archivePresent)
      t += fmt::format("[module.s.archive.site]\npath = \"/srv/s/site\"\nbundle = \"{}\"\n",
                       sites_[model_.site]);
    for (int p = 0; p < 2; ++p) {
      const auto& pr = model_.procs[p];
      if (!pr.present) continue;
      std::string on;
      for (int c = 0; c < 5; ++c)
        if ((pr.restartOn >> c & 1) && causeDeclared(c))
          on += fmt::format("{}\"{}\"", on.empty() ? "" : ", ", kCauses[c]);
      t += fmt::format(
          "[module.s.process.p{0}]\nbundle = \"{1}\"\nservice = \"s-p{0}.service\"\n"
          "restart-on = [{2}]\nunit = {{ ExecStart = \"{{bundle}}/bin/svc\", Environment = "
          "[\"V={3}\"] }}\n",
          p, bins_[pr.bundle], on, pr.env);
    }
    return t;
  }

  bool causeDeclared(int c) const {
    if (c < 3) return model_.files[c].present;
    return c == 3 ? model_.credPresent : model_.archivePresent;
  }

  // A declaration edit: one knob turned.
  void edit() {
    switch (pick(9)) {
      case 0: {
        auto& f = model_.files[pick(Model::kFiles)];
        f.content = (f.content + 1) % 3;
        break;
      }
      case 1:
        model_.files[pick(Model::kFiles)].mode ^= 1;
        break;
      case 2: {
        auto& f = model_.files[pick(Model::kFiles)];
        f.present = !f.present;
        break;
      }
      case 3:
        model_.files[pick(Model::kFiles)].dir ^= 1;  // moved
        break;
      case 4:
        model_.files[3].kind = (model_.files[3].kind + 1 + pick(2)) % 3;  // kind changed
        break;
      case 5:
        model_.secret = (model_.secret + 1) % 3;
        break;
      case 6:
        model_.site = (model_.site + 1) % 3;
        break;
      case 7: {
        auto& p = model_.procs[pick(2)];
        switch (pick(4)) {
          case 0:
            p.bundle ^= 1;
            break;
          case 1:
            p.env = (p.env + 1) % 3;
            break;
          case 2:
            p.restartOn ^= 1u << pick(5);
            break;
          default:
            p.present = !p.present;
        }
        break;
      }
      default:
        model_.archivePresent = chance(80);
        model_.credPresent = chance(80);
    }
  }

  // Someone on the node changes a managed file behind mesh-host's back.
  void drift() {
    ++drifts_;
    std::vector<std::string> files;
    for (int i = 0; i < 3; ++i)
      if (model_.files[i].present) files.push_back(root_ + filePath(i));
    if (model_.credPresent) files.push_back(root_ + "/srv/s/secret");
    if (model_.archivePresent) files.push_back(root_ + "/srv/s/site/index.html");
    if (files.empty()) return;
    const std::string f = files[pick(static_cast<int>(files.size()))];
    std::error_code ec;
    if (!fs::exists(f, ec)) return;
    switch (pick(3)) {
      case 0:
        std::ofstream(f, std::ios::trunc) << "drifted\n";
        break;
      case 1:
        fs::remove(f, ec);
        break;
      default:
        ::chmod(f.c_str(), 0666);
    }
    observeCauses(++world_.tick);  // the outside writer's change is a change of the cause
  }

  void oneStep() {
    const int r = pick(100);
    bool crash = false;
    if (r < 45) {
      edit();
    } else if (r < 60) {
      edit();
      crash = true;
    } else if (r < 70) {
      drift();
    } else if (r < 75 && lastClean_) {
      // Only when nothing is owed: a store lost with an owed restart in it is a
      // loss no node can recover from (the machine shows no trace of it).
      ++lostStores_;
      for (const char* f : {"/state.db", "/state.db-wal", "/state.db-shm"})
        fs::remove(stateDir() + f);
    } else if (r < 80) {
      ++supervisorFaults_;
      world_.failNext = 1;
    }  // else: nothing changed: the no-op check below
    const bool quiet = r >= 80 && lastClean_;
    cycle(crash, quiet);
  }

  std::string stateDir() const { return root_ + "/var/lib/mesh-host"; }

  void cycle(bool crash, bool quiet) {
    std::ofstream(work_ + "/secret", std::ios::trunc) << "secret v" << model_.secret;
    const std::string declText = text();
    decl::ParseOptions po;
    po.node = "sim";
    po.baseDir = work_;
    po.stateDir = "/var/lib/mesh-host";
    if (declText.empty()) return;  // an empty declaration is refused: nothing to run
    const auto declaration = decl::parseDeclaration(declText, "sim.toml", po);
    noteEdges(declaration);
    const auto before = statManaged();
    const int64_t callsBefore = world_.calls;
    cycleStart_ = ++world_.tick;
    world_.restarts.clear();
    crashAt = crash ? 1 + pick(4) : 0;
    crashSeen = 0;
    ++cycles_;
    apply::CycleReport report;
    bool crashed = false;
    try {
      fs::create_directories(stateDir());
      auto store = state::Store::open(stateDir());
      apply::Settings s;
      s.root = root_;
      s.stateDir = stateDir();
      s.blobs = blobs_;
      s.node = "sim";
      s.makeSupervisor = [this] { return std::make_unique<RecordingSupervisor>(world_); };
      apply::Context ctx(s);
      report = apply::runCycle(ctx, declaration, declText, &store);
    } catch (const SimulatedCrash&) {
      crashed = true;
      ++crashes_;
    } catch (const Error& e) {
      return mismatch(fmt::format("the cycle threw: {}", e.what()));
    }
    crashAt = 0;
    world_.failNext = 0;
    if (std::getenv("MESH_SIM_VERBOSE")) {
      std::fprintf(stderr, "-- step %d: %s%s\n%s", step_, crashed ? "crashed " : "",
                   quiet ? "quiet" : "", declText.c_str());
      for (const auto& res : report.results)
        std::fprintf(stderr, "   %s %s: %s %s\n", apply::verdictName(res.outcome.verdict()),
                     res.id.c_str(), res.outcome.reason().c_str(), res.outcome.detail().c_str());
      for (const auto& r : world_.restarts)
        std::fprintf(stderr, "   restart %s (prev start %llu, now %llu)\n", r.service.c_str(),
                     static_cast<unsigned long long>(r.prevStart),
                     static_cast<unsigned long long>(r.tick));
    }
    observeCauses(cycleStart_);
    judgeRestarts();
    if (snapshot(outside_) != outsideBefore_) mismatch("something outside the root changed");
    // A dropped restart-on edge owes nothing more for older changes.
    for (auto& [service, owed] : owedSince_)
      for (auto it = owed.begin(); it != owed.end();)
        it = restartOn_[service].count(it->first) ? std::next(it) : owed.erase(it);
    if (crashed) {
      lastClean_ = false;
      return;
    }
    checkUntouched(report, declaration, before);
    checkRecords();
    lastClean_ = report.failed == 0;
    if (lastClean_) {
      ++cleanCycles_;
      checkPaid(declaration);
    }
    if (quiet) {
      if (report.created + report.updated + report.removed + report.failed != 0)
        mismatch(fmt::format("a cycle with nothing to do changed {} resource(s)",
                             report.created + report.updated + report.removed));
      if (world_.calls != callsBefore) mismatch("a cycle with nothing to do called the supervisor");
    }
  }

  // The state of every restart-on cause as it is on disk now; a difference from
  // the last look is a change, stamped with the tick of the cycle that made it.
  // A change owes a restart to the processes that list the cause in restart-on
  // at that moment (an edge added later owes nothing for an older change).
  void observeCauses(uint64_t tick) {
    for (const char* c : kCauses) {
      const std::string now = causeState(c);
      auto& last = causeState_[c];
      if (now != last)
        for (const auto& [service, causes] : restartOn_)
          if (causes.count(c)) owedSince_[service][c] = tick;
      last = now;
    }
  }

  void noteEdges(const decl::Declaration& d) {
    restartOn_.clear();
    for (const auto& res : d.resources)
      if (res.kind == decl::Kind::Process) {
        auto& causes = restartOn_[std::get<decl::ProcessSpec>(res.spec).service];
        causes.insert(res.restartOn.begin(), res.restartOn.end());
      }
  }

  std::string causeState(const std::string& id) const {
    std::string path;
    if (id == "s.cred")
      path = "/srv/s/secret";
    else if (id == "s.site")
      path = "/srv/s/site";
    else
      path = filePath(id[3] - '0');
    std::error_code ec;
    const std::string p = root_ + path;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return "absent";
    // Where it lives is part of it: a moved cause is a changed one.
    std::string out = fmt::format("{} {:o}", path, st.st_mode);
    if (S_ISREG(st.st_mode))
      out += Digest::ofFile(p).str();
    else if (S_ISDIR(st.st_mode))
      for (const auto& e : fs::recursive_directory_iterator(p, ec))
        if (e.is_regular_file())
          out += e.path().string() + Digest::ofFile(e.path()).str() +
                 fmt::format("{:o}", static_cast<unsigned>(fs::status(e.path()).permissions()));
    return out;
  }

  void judgeRestarts() {
    for (const auto& r : world_.restarts) {
      ++restarts_;
      bool justified = world_.installTick[r.service] > r.prevStart;
      for (const auto& [cause, tick] : owedSince_[r.service])
        justified |= tick > r.prevStart && tick < r.tick;
      if (!justified) mismatch(fmt::format("{} was restarted without a cause", r.service));
    }
  }

  void checkPaid(const decl::Declaration& d) {
    for (const auto& res : d.resources) {
      if (res.kind != decl::Kind::Process) continue;
      const auto& name = std::get<decl::ProcessSpec>(res.spec).service;
      const auto& s = world_.services[name];
      if (!s.active) {
        mismatch(fmt::format("{} is not running after a clean cycle", name));
        continue;
      }
      if (world_.installTick[name] > s.startTick)
        mismatch(fmt::format("{} runs an old unit: its restart was lost", name));
      for (const auto& [cause, tick] : owedSince_[name]) {
        if (tick > s.startTick)
          mismatch(fmt::format("{} did not restart after {} changed: the restart was lost", name,
                               cause));
        else if (tick > paidUpTo_[name + cause])
          ++paid_, paidUpTo_[name + cause] = tick;
      }
    }
  }

  struct Stat {
    ino_t ino = 0;
    int64_t mtimeNs = 0;
    mode_t mode = 0;
    bool operator==(const Stat&) const = default;
  };
  std::map<std::string, Stat> statManaged() const {
    std::map<std::string, Stat> out;
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(root_ + "/srv", ec)) {
      struct stat st {};
      if (::lstat(e.path().c_str(), &st) != 0) continue;
      out[e.path().string().substr(root_.size())] = {
          st.st_ino, st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec, st.st_mode};
    }
    return out;
  }

  void checkUntouched(const apply::CycleReport& report, const decl::Declaration& d,
                      const std::map<std::string, Stat>& before) {
    const auto after = statManaged();
    std::map<std::string, std::string> paths;
    for (const auto& res : d.resources) paths[res.id] = res.path();
    for (const auto& r : report.results) {
      if (r.outcome.verdict() != apply::Verdict::Unchanged || paths[r.id].empty()) continue;
      const auto b = before.find(paths[r.id]), a = after.find(paths[r.id]);
      if (b == before.end() || a == after.end() || !(b->second == a->second))
        mismatch(fmt::format("{} was reported unchanged but {} was touched", r.id, paths[r.id]));
    }
  }

  void checkRecords() {
    auto store = state::Store::open(stateDir(), state::Store::Access::ReadOnly);
    for (const auto& [id, rec] : store.loadRecords())
      if (rec.outcome != "failed" && rec.wrote.empty())
        mismatch(fmt::format("the record of {} carries no digest", id));
  }

  std::map<std::string, std::string> snapshot(const std::string& dir) const {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      struct stat st {};
      ::lstat(e.path().c_str(), &st);
      out[e.path()] = fmt::format("{}:{:o}:{}", st.st_ino, st.st_mode, st.st_size);
    }
    return out;
  }

  void mismatch(const std::string& what) {
    ++mismatches_;
    std::fprintf(stderr,
                 "MISMATCH at seed %llu step %d: %s\n  replay: mesh_sim --seed %llu --steps %d\n",
                 static_cast<unsigned long long>(seed_), step_, what.c_str(),
                 static_cast<unsigned long long>(seed_), step_);
  }

  uint64_t seed_;
  std::mt19937_64 rng_;
  std::string work_, root_, outside_, blobs_;
  std::vector<std::string> sites_, bins_;
  int sources_ = 0;
  Model model_;
  World world_;
  std::map<std::string, std::string> causeState_, outsideBefore_;
  std::map<std::string, uint64_t> paidUpTo_;
  std::map<std::string, std::set<std::string>> restartOn_;  // service → its causes, now
  std::map<std::string, std::map<std::string, uint64_t>> owedSince_;  // service → cause → tick
  uint64_t cycleStart_ = 0;
  bool lastClean_ = false;
  int step_ = 0, cycles_ = 0, cleanCycles_ = 0, crashes_ = 0, lostStores_ = 0, supervisorFaults_ = 0, drifts_ = 0,
      paid_ = 0, mismatches_ = 0;
  uint64_t restarts_ = 0;
};

}  // namespace
}  // namespace mesh::sim

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  uint64_t seed = 1;
  int steps = 2000, seeds = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--seed")
      seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--steps")
      steps = std::atoi(argv[i + 1]);
    else if (a == "--seeds")
      seeds = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: mesh_sim [--seed S] [--steps N] [--seeds K]\n");
      return 2;
    }
  }
  int failed = 0;
  for (int k = 0; k < seeds; ++k) {
    // A tmpfs by default: the simulation is about order, not disk speed.
    const char* base = std::getenv("MESH_SIM_DIR");
    std::string tmpl = fmt::format("{}/mesh-sim.XXXXXX",
                                   base ? base : (fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp"));
    const std::string work = ::mkdtemp(tmpl.data());
    failed |= mesh::sim::Sim(seed + static_cast<uint64_t>(k), work).run(steps);
    if (!failed) std::filesystem::remove_all(work);
  }
  return failed;
}
