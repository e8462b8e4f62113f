// Restarts owed by a change are paid once, whatever comes between: a failed
// restart, a crash between a change and its record, a power cut that takes back
// the store's last commits (the store runs synchronous = NORMAL; files written
// by a cycle are fsynced and stay). Real cycles, in-process, over a temp tree
// and store, with a service manager that outlives them; the simulated disk of
// the fault simulation (tests/sim/disk.hh) plays the power cut.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "apply/cycle.hh"
#include "decl/parse.hh"
#include "disk.hh"
#include "state/store.hh"
#include "util/digest.hh"
#include "util/faults.hh"

namespace mesh::apply {
namespace {

namespace fs = std::filesystem;

int64_t nowUs() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

// A service manager that outlives every cycle (and the crash), counting restarts.
struct Services {
  std::map<std::string, supervise::ServiceState> state;
  int restarts = 0;       // made by mesh-host
  int reloads = 0;        // reloads made by mesh-host (the pid stays)
  bool failNext = false;  // the next start or restart fails
  bool failNextReload = false;
};

class FakeSupervisor : public supervise::Supervisor {
 public:
  explicit FakeSupervisor(Services& s) : s_(s) {}
  std::string name() const override { return "fake"; }
  std::map<std::string, supervise::ServiceState> observe(const std::vector<std::string>& names,
                                                         bool) override {
    std::map<std::string, supervise::ServiceState> out;
    for (const auto& n : names) out[n] = s_.state[n];
    return out;
  }
  void install(const supervise::Unit& unit) override {
    s_.state[unit.name].installed = true;
    s_.state[unit.name].installedText = unit.text;
  }
  void uninstall(const std::string& name) override { s_.state[name] = {}; }
  void start(const std::string& name) override { run(name); }
  void restart(const std::string& name) override {
    if (s_.failNext) {
      s_.failNext = false;
      throw Error("restart of {} failed: exit-code", name);
    }
    ++s_.restarts;
    run(name);
  }
  void stop(const std::string& name) override { s_.state[name].active = false; }
  void reloadService(const std::string& name) override {
    if (!s_.state[name].active) throw Error("reload of {} failed: it is not running", name);
    if (s_.failNextReload) {
      s_.failNextReload = false;
      throw Error("reload of {} failed: exit-code", name);
    }
    ++s_.reloads;
  }
  std::vector<std::string> unsupportedKeys(const supervise::Unit&) const override { return {}; }

  // A start takes time: it ends in a later millisecond than anything before it.
  // Also what a reboot, or the service's own Restart=, does.
  static void run(Services& s, const std::string& name) {
    const int64_t ms = nowUs() / 1000;
    while (nowUs() / 1000 == ms) {
    }
    auto& st = s.state[name];
    st.active = true;
    st.activeState = "active";
    st.sinceUs = nowUs();
    st.pid = 42;
  }

 private:
  void run(const std::string& name) { run(s_, name); }
  Services& s_;
};

class OwedRestarts : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { sim::disk::install(); }  // before any store opens

  void SetUp() override {
    char tmpl[] = "/tmp/mesh-os-crash-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    work = tmpl;
    fs::create_directories(work + "/src/bin");
    fs::create_directories(work + "/blobs/sha256");
    std::ofstream(work + "/src/bin/svc") << "#!/bin/sh\n";
    const std::string tar = work + "/svc.tar";
    ASSERT_EQ(std::system(fmt::format("tar -C '{}/src' -cf '{}' .", work, tar).c_str()), 0);
    bundle = Digest::ofFile(tar).str();
    fs::copy_file(tar, work + "/blobs/sha256/" + Digest::ofFile(tar).hex());
  }
  void TearDown() override {
    sim::disk::forget(stateDir() + "/state.db");
    fs::remove_all(work);
  }

  std::string stateDir() const { return work + "/root/var/lib/mesh-host"; }

  std::string declaration(const std::string& configPath, int key = 1, int x = 1) const {
    return fmt::format(
        "[module.m.file.config]\npath = \"{}\"\ncontent = \"x = {}\\n\"\n"
        "[module.m.file.key]\npath = \"/srv/key\"\ncontent = \"key {}\\n\"\n"
        "[module.m.process.svc]\nbundle = \"{}\"\nservice = \"svc.service\"\n"
        "restart-on = [\"m.config\", \"m.key\"]\n"
        "unit = {{ ExecStart = \"{{bundle}}/bin/svc\" }}\n",
        configPath, x, key, bundle);
  }

  // The same node, its process reloading on m.config and restarting on m.key.
  std::string reloading(int key = 1, int x = 1) const {
    std::string t = declaration("/srv/a/config", key, x);
    const std::string from = "restart-on = [\"m.config\", \"m.key\"]\n";
    t.replace(t.find(from), from.size(), "restart-on = [\"m.key\"]\nreload-on = [\"m.config\"]\n");
    return t;
  }

  std::vector<state::OwedRestart> owedRows() {
    auto store = state::Store::open(stateDir(), state::Store::Access::ReadOnly);
    return store.owedRestarts();
  }

  // One cycle; with `powerCut`, the disk as it stood for good at the cycle's
  // end, before its store closed (a close would sync everything).
  CycleReport cycle(const std::string& text, std::optional<sim::disk::Images>* powerCut = nullptr) {
    decl::ParseOptions po;
    po.node = "t";
    po.baseDir = work;
    po.stateDir = "/var/lib/mesh-host";
    const auto d = decl::parseDeclaration(text, "t.toml", po);
    fs::create_directories(stateDir());
    auto store = state::Store::open(stateDir());
    Settings s;
    s.root = work + "/root";
    s.stateDir = stateDir();
    s.blobs = work + "/blobs";
    s.node = "t";
    s.makeSupervisor = [this] { return std::make_unique<FakeSupervisor>(services); };
    Context ctx(s);
    CycleReport report = runCycle(ctx, d, text, &store);
    if (powerCut) *powerCut = sim::disk::osCrash();
    return report;
  }

  static const Outcome& outcomeOf(const CycleReport& r, const std::string& id) {
    for (const auto& res : r.results)
      if (res.id == id) return res.outcome;
    throw std::runtime_error("no outcome for " + id);
  }

  std::string work, bundle;
  Services services;
};

// Regression (found by the fault simulation): the record of a change that owes
// restarts was committed unsynced. A power cut after the cycle's restart took
// the record back but not the change (a move); the next cycle took the move for
// new, reported it `updated` and restarted the process a second time.
TEST_F(OwedRestarts, AChangeWhoseRestartWasMadeIsNotTakenForNewAfterAPowerCut) {
  cycle(declaration("/srv/a/config"));
  ASSERT_TRUE(services.state["svc.service"].active);
  ASSERT_EQ(services.restarts, 0);

  std::optional<sim::disk::Images> disk;
  const auto moved = declaration("/srv/b/config");
  EXPECT_EQ(outcomeOf(cycle(moved, &disk), "m.config").verdict(), Verdict::Updated);
  ASSERT_EQ(services.restarts, 1);
  sim::disk::restoreAfterOsCrash(*disk);

  const auto after = cycle(moved);
  EXPECT_EQ(outcomeOf(after, "m.config").verdict(), Verdict::Unchanged)
      << outcomeOf(after, "m.config").reason();
  EXPECT_EQ(services.restarts, 1) << "one change, restarted for twice";
  EXPECT_EQ(after.tally.created + after.tally.updated + after.tally.removed + after.tally.failed,
            0);
}

// Regression (found by the fault simulation): a process whose old owed restart
// was paid (the service had started since) had all its owed restarts cleared,
// the one a cause had just recorded in the same cycle included; when that
// cycle's restart then failed, the restart the change owed was lost.
TEST_F(OwedRestarts, AFailedRestartStaysOwedWhenAnOlderOneWasPaid) {
  cycle(declaration("/srv/a/config"));
  services.failNext = true;  // the config changes; its restart fails: owed
  ASSERT_EQ(cycle(declaration("/srv/a/config", 1, 2)).tally.failed, 1);
  FakeSupervisor::run(services, "svc.service");  // restarted outside mesh-host: paid
  services.failNext = true;                      // the key changes; its restart fails
  const auto keyed = declaration("/srv/a/config", 2, 2);
  ASSERT_EQ(cycle(keyed).tally.failed, 1);
  ASSERT_EQ(services.restarts, 0);

  cycle(keyed);  // nothing changes now: what the key owes is paid now
  EXPECT_EQ(services.restarts, 1) << "the restart the key's change owed was lost";
  EXPECT_EQ(cycle(keyed).tally.updated, 0);
  EXPECT_EQ(services.restarts, 1);
}

// Regression (found by the fault simulation): an intent may not replace a
// confirmed row. When that row was paid already (the service had started since)
// and the cycle died after its change, before recording it, the next cycle
// found the old row paid and dropped it: the restart the change owed was lost.
TEST_F(OwedRestarts, AChangeAfterAPaidRestartStaysOwedWhenItsCycleDies) {
  cycle(declaration("/srv/a/config"));
  services.failNext = true;  // the key changes; its restart fails: owed
  ASSERT_EQ(cycle(declaration("/srv/a/config", 2)).tally.failed, 1);
  FakeSupervisor::run(services, "svc.service");  // restarted outside mesh-host: paid
  setCrashHook([](const char* point) {
    if (std::string_view(point) == crash::kBeforeRecord) throw std::logic_error("killed");
  });
  EXPECT_THROW(cycle(declaration("/srv/a/config", 3)), std::logic_error);  // changed, then killed
  setCrashHook(nullptr);
  ASSERT_EQ(services.restarts, 0);

  cycle(declaration("/srv/a/config", 3));
  EXPECT_EQ(services.restarts, 1) << "the restart the key's second change owed was lost";
}

// Regression (found by the fault simulation): a crash between a move and its
// record, then a reboot (which started the service anew, after the move); the
// next cycle found the move done, took it for a change of its own, and
// restarted the process again. The intent the crashed cycle synced says the
// change was its: the move is `unchanged` now, and the reboot paid for it.
TEST_F(OwedRestarts, AMoveACrashCutShortIsNotMadeAgainAfterAReboot) {
  cycle(declaration("/srv/a/config"));
  const auto moved = declaration("/srv/b/config");
  setCrashHook([](const char* point) {
    if (std::string_view(point) == crash::kBeforeRecord) throw std::logic_error("killed");
  });
  EXPECT_THROW(cycle(moved), std::logic_error);
  setCrashHook(nullptr);
  ASSERT_TRUE(fs::exists(work + "/root/srv/b/config"));
  ASSERT_FALSE(fs::exists(work + "/root/srv/a/config"));
  FakeSupervisor::run(services, "svc.service");  // the node reboots

  const auto after = cycle(moved);
  const auto& o = outcomeOf(after, "m.config");
  EXPECT_EQ(o.verdict(), Verdict::Unchanged) << o.reason() << " " << o.detail();
  EXPECT_EQ(o.reason(), "moved from /srv/a/config");
  EXPECT_EQ(services.restarts, 0) << "the reboot had paid for the move";
  EXPECT_EQ(cycle(moved).tally.updated, 0);
}

// Regression (found by the fault simulation, issue 30): a file mesh-host
// adopted and later wrote back to what it found was "restored" when undeclared
// — the same bytes, mode and owner written again — and its removal restarted
// the process that had listed it, though nothing had changed on disk.
TEST_F(OwedRestarts, AGiveBackThatFindsTheOriginalInPlaceRestartsNothing) {
  fs::create_directories(work + "/root/srv/a");
  std::ofstream(work + "/root/srv/a/config") << "x = 1\n";  // there before mesh-host
  ::chmod((work + "/root/srv/a/config").c_str(), 0644);
  ASSERT_EQ(outcomeOf(cycle(declaration("/srv/a/config", 1, 2)), "m.config").reason(), "adopted");
  ASSERT_EQ(outcomeOf(cycle(declaration("/srv/a/config", 1, 1)), "m.config").verdict(),
            Verdict::Updated);  // written back to what was there
  const int restarts = services.restarts;
  ASSERT_EQ(restarts, 1);

  std::string without = declaration("/srv/a/config");
  without.erase(0, without.find("[module.m.file.key]"));
  const std::string from = "restart-on = [\"m.config\", \"m.key\"]";
  without.replace(without.find(from), from.size(), "restart-on = [\"m.key\"]");
  const auto after = cycle(without);
  const auto& o = outcomeOf(after, "m.config");
  EXPECT_EQ(o.verdict(), Verdict::Removed);
  EXPECT_EQ(o.reason(), "restored what was there before mesh-host");
  EXPECT_EQ(o.detail().rfind("already as it was before mesh-host: ", 0), 0u) << o.detail();
  EXPECT_EQ(services.restarts, restarts) << "restarted for a give-back that changed nothing";
  EXPECT_EQ(outcomeOf(after, "m.svc").verdict(), Verdict::Unchanged);
}

// A give-back that changes the file restarts what listed it, once; a crash
// between the give-back and its record does not make it restart twice.
TEST_F(OwedRestarts, AGiveBackACrashCutShortRestartsOnce) {
  fs::create_directories(work + "/root/srv/a");
  std::ofstream(work + "/root/srv/a/config") << "x = 0\n";  // there before mesh-host
  cycle(declaration("/srv/a/config"));
  ASSERT_EQ(services.restarts, 0);
  std::string without = declaration("/srv/a/config");
  without.erase(0, without.find("[module.m.file.key]"));
  const std::string from = "restart-on = [\"m.config\", \"m.key\"]";
  without.replace(without.find(from), from.size(), "restart-on = [\"m.key\"]");
  setCrashHook([](const char* point) {
    if (std::string_view(point) == crash::kBeforeRecord) throw std::logic_error("killed");
  });
  EXPECT_THROW(cycle(without), std::logic_error);  // put back, then killed
  setCrashHook(nullptr);
  std::stringstream put;
  put << std::ifstream(work + "/root/srv/a/config").rdbuf();
  EXPECT_EQ(put.str(), "x = 0\n");

  cycle(without);
  EXPECT_EQ(services.restarts, 1) << "the give-back's restart was made once";
  EXPECT_EQ(cycle(without).tally.removed, 0);
  EXPECT_EQ(services.restarts, 1);
}

TEST_F(OwedRestarts, AReloadOnChangeReloadsTheServiceAndRestartsNothing) {
  cycle(reloading());
  const int pid = services.state["svc.service"].pid;
  const auto r = cycle(reloading(1, 2));
  const auto& o = outcomeOf(r, "m.svc");
  EXPECT_EQ(o.verdict(), Verdict::Updated);
  EXPECT_EQ(o.reason(), "reload-on m.config");
  EXPECT_EQ(o.detail(), "reloaded svc.service");
  EXPECT_FALSE(o.restarted);
  EXPECT_EQ(services.reloads, 1);
  EXPECT_EQ(services.restarts, 0);
  EXPECT_EQ(r.supervisorCalls.reloadService, 1);
  EXPECT_EQ(r.supervisorCalls.restart, 0);
  EXPECT_EQ(services.state["svc.service"].pid, pid);
  EXPECT_TRUE(owedRows().empty()) << "the reload paid what it owed";
  EXPECT_EQ(cycle(reloading(1, 2)).tally.updated, 0);
  EXPECT_EQ(services.reloads, 1) << "a no-op cycle reloads nothing";
}

TEST_F(OwedRestarts, ARestartAndAReloadOwedInOneCycleMakeOneRestart) {
  cycle(reloading());
  const auto r = cycle(reloading(2, 2));  // the key (restart-on) and the config (reload-on)
  const auto& o = outcomeOf(r, "m.svc");
  EXPECT_EQ(o.reason(), "restart-on m.key; reload-on m.config");
  EXPECT_EQ(o.detail(), "restarted svc.service");
  EXPECT_EQ(services.restarts, 1);
  EXPECT_EQ(services.reloads, 0) << "the restart wins";
  EXPECT_TRUE(owedRows().empty()) << "the restart paid the reload too";
}

// The same intent rule as restarts: written, synced, before the change it owes.
TEST_F(OwedRestarts, AReloadOwedByAChangeIsMadeByTheNextCycleWhenItsCycleDies) {
  for (const char* point : {crash::kAfterIntent, crash::kBeforeRecord, crash::kAfterChangeRecorded,
                            crash::kBeforeRestart}) {
    SCOPED_TRACE(point);
    services = {};
    fs::remove_all(work + "/root");
    sim::disk::forget(stateDir() + "/state.db");
    cycle(reloading());
    static std::string at;
    at = point;
    setCrashHook([](const char* p) {
      if (at == p) throw std::logic_error("killed");
    });
    EXPECT_THROW(cycle(reloading(1, 2)), std::logic_error);
    setCrashHook(nullptr);
    ASSERT_EQ(services.reloads, 0);
    auto rows = owedRows();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_TRUE(rows[0].reload);
    EXPECT_EQ(rows[0].cause, "m.config");

    const auto r = cycle(reloading(1, 2));
    const auto& o = outcomeOf(r, "m.svc");
    EXPECT_EQ(services.reloads, 1) << o.reason();
    EXPECT_EQ(services.restarts, 0) << "a reload never counts as a restart";
    EXPECT_NE(o.reason().find("reload"), std::string::npos) << o.reason();
    EXPECT_TRUE(owedRows().empty());
    cycle(reloading(1, 2));
    EXPECT_EQ(services.reloads, 1);
  }
}

TEST_F(OwedRestarts, AReloadOwedSurvivesAPowerCutAfterTheChange) {
  cycle(reloading());
  setCrashHook([](const char* point) {
    if (std::string_view(point) == crash::kBeforeRestart) throw std::logic_error("killed");
  });
  std::optional<sim::disk::Images> disk;
  EXPECT_THROW(cycle(reloading(1, 2), &disk), std::logic_error);
  setCrashHook(nullptr);
  disk = sim::disk::osCrash();
  sim::disk::restoreAfterOsCrash(*disk);
  cycle(reloading(1, 2));
  EXPECT_EQ(services.reloads, 1) << "the reload the change owed was lost";
  EXPECT_EQ(services.restarts, 0);
}

TEST_F(OwedRestarts, AFailedReloadStaysOwedAndAnIntentNeverReplacesItsRow) {
  cycle(reloading());
  services.failNextReload = true;
  ASSERT_EQ(cycle(reloading(1, 2)).tally.failed, 1);
  ASSERT_EQ(owedRows().size(), 1u);
  const auto r = cycle(reloading(1, 2));
  EXPECT_EQ(outcomeOf(r, "m.svc").reason().rfind("owed reload: m.config (cycle ", 0), 0u)
      << outcomeOf(r, "m.svc").reason();
  EXPECT_EQ(services.reloads, 1);
  EXPECT_EQ(services.restarts, 0);
  EXPECT_TRUE(owedRows().empty());
}

// A confirmed row that owes a restart stays one: a reload owed later for the same
// cause (its edge moved from restart-on to reload-on) does not turn it into a reload.
TEST_F(OwedRestarts, AnOwedRestartIsNotDowngradedToAReload) {
  fs::create_directories(stateDir());
  {
    auto store = state::Store::open(stateDir());
    store.oweRestart({"m.svc", "m.config", 1, 10, "", false});
    store.oweRestart({"m.svc", "m.config", 2, 20, "", true});
    auto rows = store.owedRestarts();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_FALSE(rows[0].reload);
    EXPECT_EQ(rows[0].cycle, 2);
    store.clearOwedReloads("m.svc");
    EXPECT_EQ(store.owedRestarts().size(), 1u) << "clearing reloads cleared a restart";
    store.oweRestart({"m.svc", "m.key", 2, 20, "", true});
    store.clearOwedReloads("m.svc");
    EXPECT_EQ(store.owedRestarts().size(), 1u);
    // Regression (found by the fault simulation): an intent to restart, whose change
    // never happened (its cycle died first), was kept a restart when the edge moved
    // to reload-on and the next cycle owed a reload: a restart without a cause.
    store.oweRestart({"m.svc", "m.key", 3, 30, "sha256:x", false});
    store.oweRestart({"m.svc", "m.key", 4, 40, "sha256:y", true});
    rows = store.owedRestarts();
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[1].cause, "m.key");
    EXPECT_TRUE(rows[1].reload);
  }
}

}  // namespace
}  // namespace mesh::apply
