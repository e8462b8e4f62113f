// The deterministic fault simulation: the oracle every change runs against.
//
// One seeded driver runs cycles in-process (the real apply code, a real temp
// tree, a real SQLite store on a simulated disk, disk.hh) with a recording
// supervisor backend, drawing each step from:
//   - declaration edits (content, modes, bundles, unit keys, restart-on edges,
//     resources added, removed, moved, kind-changed) and outside drift;
//   - a crash at any crash point of a cycle (the process dies; what it
//     committed stays);
//   - an OS crash at any crash point or at the end of a cycle: a power cut, so
//     the store's commits not yet synced are lost, fsynced files survive; a
//     quarter of them reboot the node (its service manager starts every
//     installed service anew), the others keep the services running (the
//     harder case: nothing pays an owed restart but mesh-host);
//   - a lost store (only when nothing is owed) or a corrupt store page (a page
//     of state.db overwritten with garbage between cycles);
//   - a full disk: from a random write of the cycle on, store writes fail with
//     SQLITE_FULL and file writes with ENOSPC (the test-only setWriteFaultHook);
//   - a supervisor that fails a start or restart, or hangs on a call (start,
//     restart, stop, status) and times out as the real backends do, the job
//     done behind the caller's back half of the time.
// After every step it checks, from what it saw alone:
//   - every restart has a cause: since the service's previous start, one of its
//     restart-on resources changed on disk, or its own unit did (a move onto
//     what is already there changes nothing on disk: it may justify a restart,
//     as mesh-host reports it `updated`, but owes none);
//   - every reload has a cause: since the service's last start, one of its
//     reload-on resources changed on disk (a reload made again after a crash
//     between it and its record is allowed: the machine keeps no trace of it);
//     a reload-on change never justifies a restart, and a reload never pays
//     a restart (it leaves the start time as it was);
//   - every reload owed is made: after a cycle that ran through without a
//     failure, every running service was started or reloaded after the last
//     change of each of its reload-on causes;
//   - every cause is paid exactly once: after a cycle that ran through without
//     a failure, every running service started after the last change of each
//     of its causes and of its unit (so at most one cycle late after a crash),
//     and a second restart for the same change has no cause;
//   - unchanged resources are untouched (inode, mtime, mode), and a resource
//     that failed (a full disk, a failed requirement) left what was there;
//   - every record of a resource that did not fail carries its digest;
//   - nothing is written outside the root;
//   - a cycle with nothing to do does nothing (no writes, no supervisor calls);
//   - a cycle may end with an error only on a full disk, or on a damaged store:
//     then it says "state store … is damaged (…); move it aside …", notes it in
//     last-error for `status` (unless the disk is full too), and changes
//     nothing (no path, no supervisor call; leftovers of a crashed write aside).
// After such a failure the driver moves the damaged store aside, as an operator
// would. What the oracle expects of a lost store (deleted, or moved aside):
// nothing is restarted that was not owed, and the next cycles adopt what they
// find; but a restart owed when the store went (its intent or confirmed row was
// in it) may be lost with it — the machine keeps no trace of a change already
// in place — so those causes (and a unit installed but not yet restarted for)
// are forgiven, counted as "causes forgiven with a lost store". A change made
// after the loss is owed as any other.
// A mismatch prints the seed and step; `mesh_sim --seed S --steps N` replays it
// (MESH_SIM_VERBOSE=1 shows each cycle, MESH_SIM_KEEP=1 keeps the work dir).
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "apply/cycle.hh"
#include "decl/parse.hh"
#include "disk.hh"
#include "recording_supervisor.hh"
#include "state/store.hh"
#include "util/digest.hh"
#include "util/error.hh"
#include "util/faults.hh"
#include "util/fs.hh"

namespace mesh::sim {
namespace {

namespace fs = std::filesystem;

// Thrown from the crash hook: not a mesh::Error, so no cycle catches it — the
// cycle ends where it stands, its open transaction rolled back, as a kill would.
struct SimulatedCrash {};
int crashAt = 0;  // the Nth crash point of the running cycle crashes; 0: none
int crashSeen = 0;
// An OS crash: at the crash, what the store's files hold on disk for good
// (disk.hh); written back once the crashed cycle's connection is gone.
bool osCrash = false;
std::optional<disk::Images> osImages;
// A crash that something swallowed (noteCycleError catches everything) is
// thrown again at every later point: a killed process runs no further.
void crashHook(const char*) {
  if (crashAt > 0 && ++crashSeen >= crashAt) {
    if (osCrash && !osImages) osImages = disk::osCrash();
    throw SimulatedCrash{};
  }
}

// The service manager of the simulated machine, which survives every crash of the
// agent, and the supervisor backend over it (tests/support/recording_supervisor.hh).
using World = test::ServiceWorld;
using test::RecordingSupervisor;

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
    unsigned reloadOn = 0;   // the same bits, none also in restartOn
  } procs[2] = {{true, 0, 0, 0b11001, 0b00010}, {true, 1, 0, 0b00110, 0b01000}};
  // A `service`: the vendor's s-v.service, driven with restart-on, reload-on and
  // a drop-in (0: none).
  struct Vendor {
    bool present = true;
    int dropin = 1;
    unsigned restartOn = 0b00001, reloadOn = 0b00100;
  } vendor;
};

const char* kCauses[] = {"s.f0", "s.f1", "s.f2", "s.cred", "s.site"};

class Sim {
 public:
  Sim(uint64_t seed, std::string work) : seed_(seed), rng_(seed), work_(std::move(work)) {}

  int run(int steps) {
    setUp();
    setCrashHook(crashHook);
    setWriteFaultHook(disk::treeWriteFault);
    for (step_ = 1; step_ <= steps && mismatches_ == 0; ++step_) oneStep();
    setCrashHook(nullptr);
    setWriteFaultHook(nullptr);
    disk::forget(stateDir() + "/state.db");
    // One line of "<count> <what>" items: tests/sim/long adds them up by name.
    std::printf(
        "seed %llu: %d steps, %d cycles, %d clean cycles, %d crashes, %d os-crashes, %d reboots, "
        "%d lost stores, %d corrupt pages, %d stores moved aside, %d full-disk steps, "
        "%d hung supervisors, %d supervisor faults, %d drifts, %llu restarts each with a cause, "
        "%llu reloads each with a cause, %d causes owed and paid, %d reload causes owed and paid, "
        "%d causes forgiven with a lost store, %d mismatches\n",
        static_cast<unsigned long long>(seed_), step_ - 1, cycles_, cleanCycles_, crashes_,
        osCrashes_, reboots_, lostStores_, corruptPages_, movedAside_, fullDisks_, hangs_,
        supervisorFaults_, drifts_, static_cast<unsigned long long>(restarts_),
        static_cast<unsigned long long>(reloads_), paid_, reloadsPaid_, forgivenCauses_,
        mismatches_);
    return mismatches_ == 0 ? 0 : 1;
  }

 private:
  struct Stat {
    ino_t ino = 0;
    int64_t mtimeNs = 0;
    mode_t mode = 0;
    bool operator==(const Stat&) const = default;
  };

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
    auto& vendor = world_.services["s-v.service"];
    vendor.installed = vendor.vendor = true;
    vendor.text = "[Service]\nExecStart=/usr/sbin/vendor\n";
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
      std::string on, reloadOn;
      for (int c = 0; c < 5; ++c) {
        if ((pr.restartOn >> c & 1) && causeDeclared(c))
          on += fmt::format("{}\"{}\"", on.empty() ? "" : ", ", kCauses[c]);
        if ((pr.reloadOn >> c & 1) && causeDeclared(c))
          reloadOn += fmt::format("{}\"{}\"", reloadOn.empty() ? "" : ", ", kCauses[c]);
      }
      t += fmt::format(
          "[module.s.process.p{0}]\nbundle = \"{1}\"\nservice = \"s-p{0}.service\"\n"
          "restart-on = [{2}]\nreload-on = [{4}]\nunit = {{ ExecStart = \"{{bundle}}/bin/svc\", "
          "Environment = [\"V={3}\"] }}\n",
          p, bins_[pr.bundle], on, pr.env, reloadOn);
    }
    if (const auto& v = model_.vendor; v.present) {
      std::string on, reloadOn;
      for (int c = 0; c < 5; ++c) {
        if ((v.restartOn >> c & 1) && causeDeclared(c))
          on += fmt::format("{}\"{}\"", on.empty() ? "" : ", ", kCauses[c]);
        if ((v.reloadOn >> c & 1) && causeDeclared(c))
          reloadOn += fmt::format("{}\"{}\"", reloadOn.empty() ? "" : ", ", kCauses[c]);
      }
      t += fmt::format(
          "[module.s.service.v]\nunit = \"s-v.service\"\nstate = \"running\"\nenabled = true\n"
          "restart-on = [{}]\nreload-on = [{}]\n",
          on, reloadOn);
      if (v.dropin) t += fmt::format("dropin = {{ Environment = \"V={}\" }}\n", v.dropin);
    }
    return t;
  }

  bool causeDeclared(int c) const {
    if (c < 3) return model_.files[c].present;
    return c == 3 ? model_.credPresent : model_.archivePresent;
  }

  // A declaration edit: one knob turned.
  void edit() {
    switch (pick(10)) {
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
        switch (pick(5)) {
          case 0:
            p.bundle ^= 1;
            break;
          case 1:
            p.env = (p.env + 1) % 3;
            break;
          case 2: {
            const unsigned bit = 1u << pick(5);
            p.restartOn ^= bit;
            p.reloadOn &= ~bit;  // an edge in one list only
            break;
          }
          case 3: {
            const unsigned bit = 1u << pick(5);
            p.reloadOn ^= bit;
            p.restartOn &= ~bit;
            break;
          }
          default:
            p.present = !p.present;
        }
        break;
      }
      case 8: {
        auto& v = model_.vendor;
        switch (pick(4)) {
          case 0:
            v.dropin = (v.dropin + 1) % 3;
            break;
          case 1: {
            const unsigned bit = 1u << pick(5);
            v.restartOn ^= bit;
            v.reloadOn &= ~bit;
            break;
          }
          case 2: {
            const unsigned bit = 1u << pick(5);
            v.reloadOn ^= bit;
            v.restartOn &= ~bit;
            break;
          }
          default:
            v.present = !v.present;
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

  // What a step does to the cycle it runs, besides its edits.
  enum class Fault { None, Crash, OsCrash, FullDisk, Hang };

  void oneStep() {
    const int r = pick(100);
    Fault fault = Fault::None;
    if (r < 40) {
      edit();
    } else if (r < 52) {
      edit();
      fault = Fault::Crash;
    } else if (r < 58) {
      edit();
      fault = Fault::OsCrash;
    } else if (r < 66) {
      drift();
    } else if (r < 69 && lastClean_) {
      // Only when nothing is owed: a store lost with an owed restart in it is a
      // loss no node can recover from (the machine shows no trace of it).
      ++lostStores_;
      removeStore();
    } else if (r < 72) {
      edit();
      fault = Fault::FullDisk;
    } else if (r < 74) {
      corruptPage();
    } else if (r < 77) {
      ++supervisorFaults_;
      world_.failNext = 1;
    } else if (r < 80) {
      edit();
      fault = Fault::Hang;
    }  // else: nothing changed: the no-op check below
    const bool quiet = r >= 80 && lastClean_;
    cycle(fault, quiet);
  }

  std::string stateDir() const { return root_ + "/var/lib/mesh-host"; }

  void removeStore() {
    for (const char* f : {"/state.db", "/state.db-wal", "/state.db-shm"})
      fs::remove(stateDir() + f);
    disk::forget(stateDir() + "/state.db");
    damaged_ = false;
  }

  // A page of the store (not the first: its header says whose file it is)
  // overwritten with garbage between cycles, as a bad sector or a stray write
  // would. It is on disk for good.
  void corruptPage() {
    const std::string db = stateDir() + "/state.db";
    std::error_code ec;
    const auto size = fs::file_size(db, ec);
    if (ec || size < 100) return;
    unsigned char h[18];
    std::ifstream(db, std::ios::binary).read(reinterpret_cast<char*>(h), sizeof h);
    const uint64_t pageSize = h[16] == 0 && h[17] == 1 ? 65536 : (h[16] << 8 | h[17]);
    const auto pages = static_cast<int>(size / pageSize);
    if (pages < 2) return;
    ++corruptPages_;
    std::string garbage(pageSize, '\0');
    for (auto& c : garbage) c = static_cast<char>(pick(256));
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(pageSize) * (1 + pick(pages - 1)));
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
    f.close();
    disk::forget(db);
    damaged_ = true;
  }

  // The operator moves a damaged store aside. What it owed goes with it: the
  // machine keeps no trace of a restart owed for a change already in place, so
  // such a restart may be lost, and is no longer expected (it still justifies
  // a restart, should one come).
  void moveStoreAside() {
    ++movedAside_;
    removeStore();
    for (const auto& [name, s] : world_.services) {
      for (const auto& [cause, tick] : owedSince_[name])
        if (tick > s.startTick && tick > forgiven_[name + cause])
          forgiven_[name + cause] = tick, ++forgivenCauses_;
      for (const auto& [cause, tick] : owedReloadSince_[name])
        if (tick > std::max(s.startTick, s.reloadTick) &&
            tick > forgiven_["reload " + name + cause])
          forgiven_["reload " + name + cause] = tick, ++forgivenCauses_;
      if (world_.installTick[name] > s.startTick) forgivenUnit_[name] = world_.installTick[name];
    }
  }

  // The node comes back from an OS crash: its service manager starts every
  // installed service afresh (a start, not a restart by mesh-host).
  void reboot() {
    ++reboots_;
    for (auto& [name, s] : world_.services) {
      s.active = false;
      if (s.installed && (!s.vendor || s.enabled)) world_.startNow(s);
    }
  }

  void cycle(Fault fault, bool quiet) {
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
    if (std::getenv("MESH_SIM_VERBOSE")) {
      try {
        auto store = state::Store::open(stateDir(), state::Store::Access::ReadOnly);
        for (const auto& o : store.owedRestarts())
          std::fprintf(stderr, "   owed before: %s <- %s (cycle %lld, at %lld) %s\n",
                       o.process.c_str(), o.cause.c_str(), static_cast<long long>(o.cycle),
                       static_cast<long long>(o.at), o.intent.substr(0, 15).c_str());
      } catch (const Error&) {
      }
    }
    const int64_t callsBefore = world_.calls;
    cycleStart_ = ++world_.tick;
    world_.restarts.clear();
    world_.reloads.clear();
    // An OS crash may also come after the last crash point: at the end of the
    // cycle, before anything synced what it committed last.
    crashAt = fault == Fault::Crash ? 1 + pick(4) : fault == Fault::OsCrash ? 1 + pick(6) : 0;
    crashSeen = 0;
    osCrash = fault == Fault::OsCrash;
    osImages.reset();
    if (fault == Fault::FullDisk) {
      ++fullDisks_;
      disk::failWritesFrom(1 + pick(8));
    }
    if (fault == Fault::Hang) {
      ++hangs_;
      world_.hangAt = 1 + pick(3);
      world_.hangDone = chance(50);
    }
    ++cycles_;
    apply::CycleReport report;
    bool crashed = false;
    std::optional<std::string> failure;  // the cycle ended with a mesh::Error
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
      if (osCrash && !osImages) osImages = disk::osCrash();
    } catch (const SimulatedCrash&) {
      crashed = true;
      if (!osCrash) ++crashes_;
    } catch (const Error& e) {
      failure = e.what();
    }
    if (crashAt > 0 && crashSeen >= crashAt && !crashed) {
      // The crash came inside something that caught it; the cycle ended as a
      // kill there would have ended it.
      crashed = true;
      failure.reset();
      if (!osCrash) ++crashes_;
    }
    crashAt = 0;
    osCrash = false;
    world_.failNext = 0;
    world_.hangAt = 0;
    const bool diskFull = disk::anyWriteFailed();
    disk::failWritesFrom(0);
    const bool osCrashed = osImages.has_value();
    bool rebooted = false;
    if (osImages) {
      // The crashed cycle's connection is closed (its close synced everything):
      // now the disk goes back to what it held for good when the power went.
      ++osCrashes_;
      disk::restoreAfterOsCrash(*osImages);
      osImages.reset();
      crashed = true;
      rebooted = chance(25);
      if (rebooted) reboot();
    }
    const bool damagedStore =
        failure && damaged_ && failure->find(" is damaged (") != std::string::npos;
    if (failure && !damagedStore && !diskFull)
      return mismatch(fmt::format("the cycle threw: {}", *failure));
    if (std::getenv("MESH_SIM_VERBOSE")) {
      std::fprintf(stderr, "-- step %d: %s%s%s%s%s\n%s", step_, crashed ? "crashed " : "",
                   osCrashed ? "(OS) " : "", rebooted ? "rebooted " : "", quiet ? "quiet" : "",
                   failure ? ("failed: " + *failure + "\n").c_str() : "", declText.c_str());
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
    judgeReloads();
    if (snapshot(outside_) != outsideBefore_) mismatch("something outside the root changed");
    // A dropped restart-on edge owes nothing more for older changes.
    for (auto& [service, owed] : owedSince_)
      for (auto it = owed.begin(); it != owed.end();)
        it = restartOn_[service].count(it->first) ? std::next(it) : owed.erase(it);
    for (auto& [service, owed] : owedReloadSince_)
      for (auto it = owed.begin(); it != owed.end();)
        it = reloadOn_[service].count(it->first) ? std::next(it) : owed.erase(it);
    if (damagedStore) {
      // A damaged store fails the cycle before it changes anything, and says
      // so where `status` looks (unless the disk is full too); then the
      // operator moves it aside.
      const auto note = state::lastCycleError(stateDir());
      if (!diskFull && (!note || note->message.find(" is damaged (") == std::string::npos))
        mismatch("the damaged store is not named in last-error");
      if (auto changed = differences(before, statManaged()); !changed.empty())
        mismatch("a cycle on a damaged store changed the tree: " + changed);
      if (world_.calls != callsBefore) mismatch("a cycle on a damaged store called the supervisor");
      moveStoreAside();
    }
    if (crashed || failure) {
      lastClean_ = false;
      return;
    }
    checkUntouched(report, declaration, before);
    checkRecords();
    lastClean_ = !report.anyFailed();
    if (lastClean_) {
      ++cleanCycles_;
      checkPaid(declaration);
    }
    if (quiet) {
      const Tally& t = report.tally;
      if (t.anyChange() || t.anyFailed() || t.released != 0)
        mismatch(fmt::format("a cycle with nothing to do changed {} resource(s)",
                             t.created + t.updated + t.removed + t.released));
      if (world_.calls != callsBefore) mismatch("a cycle with nothing to do called the supervisor");
    }
  }

  // What is on disk for every restart-on cause, at every path it may be
  // declared at (a file cause: /srv/s/a/fN and /srv/s/b/fN); a difference from
  // the last look is a change, stamped with the tick of the cycle that made it.
  // A change owes a restart to the processes that list the cause in restart-on
  // at that moment (an edge added later owes nothing for an older change). A
  // move changes it when mesh-host writes the new path or deletes the old one.
  // A move onto what is already there, with nothing deleted at the old path,
  // changes nothing on disk: it owes no restart, yet justifies one (mesh-host
  // reports such a move `updated`, unless it has no record of the old path).
  void observeCauses(uint64_t tick) {
    for (const char* c : kCauses) {
      const std::string disk = causeDisk(c), where = causePath(c);
      auto& [lastDisk, lastWhere] = causeState_[c];
      const bool changed = disk != lastDisk, moved = where != lastWhere;
      if ((changed || moved) && std::getenv("MESH_SIM_VERBOSE"))
        std::fprintf(stderr, "   cause %s%s: %s\n", c, changed ? "" : " moved", disk.c_str());
      if (changed || moved) {
        for (const auto& [service, causes] : restartOn_)
          if (causes.count(c)) {
            changedSince_[service][c] = tick;
            if (changed) owedSince_[service][c] = tick;
          }
        for (const auto& [service, causes] : reloadOn_)
          if (causes.count(c)) {
            reloadChangedSince_[service][c] = tick;
            if (changed) owedReloadSince_[service][c] = tick;
          }
        // A cause deleted as it left the declaration (its edge went with it): a
        // process that listed it restarts (reloads) on its removal (docs/kinds.md).
        // Justified, not owed: what it owes depends on what the store remembered.
        if (changed && !declaredNow_.count(c)) {
          for (const auto& [service, causes] : everListed_)
            if (causes.count(c)) changedSince_[service][c] = tick;
          for (const auto& [service, causes] : everReloadListed_)
            if (causes.count(c)) reloadChangedSince_[service][c] = tick;
        }
      }
      lastDisk = disk;
      lastWhere = where;
    }
  }

  void noteEdges(const decl::Declaration& d) {
    restartOn_.clear();
    reloadOn_.clear();
    declaredNow_.clear();
    for (const auto& res : d.resources) {
      declaredNow_.insert(res.id);
      if (res.service()) {
        const auto& service = *res.service();
        restartOn_[service].insert(res.restartOn.begin(), res.restartOn.end());
        reloadOn_[service].insert(res.reloadOn.begin(), res.reloadOn.end());
        everListed_[service].insert(res.restartOn.begin(), res.restartOn.end());
        everReloadListed_[service].insert(res.reloadOn.begin(), res.reloadOn.end());
      }
    }
  }

  std::string causePath(const std::string& id) const {
    if (id == "s.cred") return "/srv/s/secret";
    if (id == "s.site") return "/srv/s/site";
    return filePath(id[3] - '0');
  }

  std::string causeDisk(const std::string& id) const {
    if (id[2] != 'f') return pathState(causePath(id));
    const std::string n(1, id[3]);
    return pathState("/srv/s/a/f" + n) + " | " + pathState("/srv/s/b/f" + n);
  }

  std::string pathState(const std::string& path) const {
    std::error_code ec;
    const std::string p = root_ + path;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return "absent";
    std::string out = fmt::format("{:o} ", st.st_mode);
    if (S_ISREG(st.st_mode))
      out += Digest::ofFile(p).str().substr(7, 12);
    else if (S_ISDIR(st.st_mode))
      for (const auto& e : fs::recursive_directory_iterator(p, ec))
        if (e.is_regular_file())
          out += e.path().string().substr(p.size()) + Digest::ofFile(e.path()).str().substr(7, 12) +
                 fmt::format("{:o}", static_cast<unsigned>(fs::status(e.path()).permissions()));
    return out;
  }

  void judgeRestarts() {
    for (const auto& r : world_.restarts) {
      ++restarts_;
      bool justified = world_.installTick[r.service] > r.prevStart;
      for (const auto& [cause, tick] : changedSince_[r.service])
        justified |= tick > r.prevStart && tick < r.tick;
      if (!justified) mismatch(fmt::format("{} was restarted without a cause", r.service));
    }
  }

  // A reload is justified by a change of one of its reload-on causes since the
  // service last started (not since its last reload: one made again after a
  // crash between the reload and its record is allowed). It is never counted as
  // a restart: World::Service::startTick stays.
  void judgeReloads() {
    for (const auto& [service, prevStart, tick] : world_.reloads) {
      ++reloads_;
      bool justified = false;
      for (const auto& [cause, changed] : reloadChangedSince_[service])
        justified |= changed > prevStart && changed < tick;
      if (!justified) mismatch(fmt::format("{} was reloaded without a cause", service));
    }
  }

  void checkPaid(const decl::Declaration& d) {
    for (const auto& res : d.resources) {
      if (!res.service()) continue;
      const auto& name = *res.service();
      const auto& s = world_.services[name];
      if (!s.active) {
        mismatch(fmt::format("{} is not running after a clean cycle", name));
        continue;
      }
      if (world_.installTick[name] > s.startTick && world_.installTick[name] > forgivenUnit_[name])
        mismatch(fmt::format("{} runs an old unit: its restart was lost", name));
      for (const auto& [cause, tick] : owedSince_[name]) {
        if (tick > s.startTick) {
          if (tick > forgiven_[name + cause])
            mismatch(fmt::format("{} did not restart after {} changed: the restart was lost", name,
                                 cause));
        } else if (tick > paidUpTo_[name + cause])
          ++paid_, paidUpTo_[name + cause] = tick;
      }
      for (const auto& [cause, tick] : owedReloadSince_[name]) {
        if (tick > std::max(s.startTick, s.reloadTick)) {
          if (tick > forgiven_["reload " + name + cause])
            mismatch(
                fmt::format("{} was neither reloaded nor restarted after {} changed: the "
                            "reload was lost",
                            name, cause));
        } else if (tick > paidUpTo_["reload " + name + cause])
          ++reloadsPaid_, paidUpTo_["reload " + name + cause] = tick;
      }
    }
  }

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

  // What a crashed write left (".mesh-tmp.…", ".mesh-new.…") is swept by the
  // next cycle as it visits each path, before it knows it will change anything.
  // The paths that differ, leftovers aside.
  static std::string differences(const std::map<std::string, Stat>& a,
                                 const std::map<std::string, Stat>& b) {
    std::string out;
    auto note = [&](const std::string& path) {
      if (path.find("/.mesh-") == std::string::npos) out += (out.empty() ? "" : ", ") + path;
    };
    for (const auto& [path, st] : a)
      if (auto it = b.find(path); it == b.end() || !(it->second == st)) note(path);
    for (const auto& [path, st] : b)
      if (!a.count(path)) note(path);
    return out;
  }

  void checkUntouched(const apply::CycleReport& report, const decl::Declaration& d,
                      const std::map<std::string, Stat>& before) {
    const auto after = statManaged();
    std::map<std::string, std::string> paths;
    for (const auto& res : d.resources) paths[res.id] = res.path();
    for (const auto& r : report.results) {
      if (paths[r.id].empty()) continue;
      const auto b = before.find(paths[r.id]), a = after.find(paths[r.id]);
      if (r.outcome.verdict() == apply::Verdict::Unchanged &&
          (b == before.end() || a == after.end() || !(b->second == a->second)))
        mismatch(fmt::format("{} was reported unchanged but {} was touched", r.id, paths[r.id]));
      // A resource that failed (a full disk) or was skipped (a failed requirement), and
      // one released, leaves what was there.
      const bool inPlace =
          b == before.end() ? a == after.end() : a != after.end() && b->second == a->second;
      if ((r.outcome.notConverged() || r.outcome.verdict() == apply::Verdict::Released) && !inPlace)
        mismatch(fmt::format("{} {} but {} was changed: {}", r.id,
                             apply::verdictName(r.outcome.verdict()), paths[r.id],
                             r.outcome.detail()));
    }
  }

  void checkRecords() {
    try {
      auto store = state::Store::open(stateDir(), state::Store::Access::ReadOnly);
      for (const auto& [id, rec] : store.loadRecords())
        if (rec.outcome != "failed" && rec.outcome != "skipped" && rec.wrote.empty())
          mismatch(fmt::format("the record of {} carries no digest", id));
    } catch (const Error& e) {
      // A damaged page the cycle did not need to read: the next cycle meets it.
      if (!damaged_) mismatch(fmt::format("the store cannot be read: {}", e.what()));
    }
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
  std::map<std::string, std::pair<std::string, std::string>> causeState_;  // disk, declared path
  std::map<std::string, std::string> outsideBefore_;
  std::map<std::string, uint64_t> paidUpTo_;
  // Unpaid when their store was moved aside: no longer expected (moveStoreAside).
  std::map<std::string, uint64_t> forgiven_, forgivenUnit_;  // service+cause / service → tick
  std::map<std::string, std::set<std::string>> restartOn_;   // service → its causes, now
  std::map<std::string, std::set<std::string>> reloadOn_;    // the same for reload-on
  // Every cause a service ever listed, and the ids declared now: a cause removed
  // with its edge justifies a restart (reload) of what listed it.
  std::map<std::string, std::set<std::string>> everListed_, everReloadListed_;
  std::set<std::string> declaredNow_;
  // As owedSince_ and changedSince_, for reload-on causes.
  std::map<std::string, std::map<std::string, uint64_t>> owedReloadSince_, reloadChangedSince_;
  std::map<std::string, std::map<std::string, uint64_t>> owedSince_;  // service → cause → tick
  // The same, kept when the edge is dropped: a change made while the edge was
  // there still justifies a restart (mesh-host pays a confirmed one), though
  // no longer requires it.
  std::map<std::string, std::map<std::string, uint64_t>> changedSince_;
  uint64_t cycleStart_ = 0;
  bool lastClean_ = false;
  bool damaged_ = false;  // a page of the store was overwritten; not moved aside yet
  int step_ = 0, cycles_ = 0, cleanCycles_ = 0, crashes_ = 0, osCrashes_ = 0, reboots_ = 0,
      lostStores_ = 0, corruptPages_ = 0, movedAside_ = 0, fullDisks_ = 0, hangs_ = 0,
      supervisorFaults_ = 0, drifts_ = 0, paid_ = 0, reloadsPaid_ = 0, forgivenCauses_ = 0,
      mismatches_ = 0;
  uint64_t restarts_ = 0, reloads_ = 0;
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
  mesh::sim::disk::install();
  int failed = 0;
  for (int k = 0; k < seeds; ++k) {
    // A tmpfs by default: the simulation is about order, not disk speed.
    const char* base = std::getenv("MESH_SIM_DIR");
    std::string tmpl = fmt::format(
        "{}/mesh-sim.XXXXXX", base ? base : (fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp"));
    const std::string work = ::mkdtemp(tmpl.data());
    failed |= mesh::sim::Sim(seed + static_cast<uint64_t>(k), work).run(steps);
    if (!failed && !std::getenv("MESH_SIM_KEEP")) std::filesystem::remove_all(work);
  }
  return failed;
}
