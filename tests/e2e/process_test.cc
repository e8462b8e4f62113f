// The guarantees this project exists for: a process is restarted exactly when
// there is a cause — never more, never less — with either supervisor backend.
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "process_fixture.hh"
#include "util/faults.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

struct Pid {
  int pid;
  std::string since;
  bool operator==(const Pid&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Pid& p) {
  return os << p.pid << "@" << p.since;
}

class Process : public ProcessNode {
 protected:
  Pid running() {
    auto s = serviceStatus();
    EXPECT_TRUE(s.value("active", false)) << s.dump();
    return {s.value("pid", 0), s.value("since", std::string())};
  }
};

// The regression this project was born from.
TEST_P(Process, ThreeAppliesNeverRestart) {
  auto decl = declare(text());
  Result first = apply(decl);
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  auto o = outcomeOf(first.json(), id());
  EXPECT_EQ(o["outcome"], "created") << o.dump();
  const std::string wrote = o["wrote"];
  ASSERT_TRUE(wrote.starts_with("sha256:"));
  const Pid pid = running();
  ASSERT_GT(pid.pid, 0);

  for (int round = 2; round <= 3; ++round) {
    Result again = apply(decl);
    ASSERT_EQ(again.code, 0) << again.out << again.err;
    auto u = outcomeOf(again.json(), id());
    EXPECT_EQ(u["outcome"], "unchanged") << u.dump();
    EXPECT_EQ(u["wrote"], wrote);
    EXPECT_EQ(u["restarted"], false);
    EXPECT_EQ(running(), pid) << "round " << round;
    Result st = mesh({"status", "--json"});
    const auto j = st.json();
    for (const auto& r : j["resources"])
      if (r["id"] == id()) {
        EXPECT_EQ(r["wrote"], wrote) << r.dump();
      }
  }
}

// Only the systemd backend installs unit files.
class SystemdProcess : public Process {};

TEST_P(SystemdProcess, InstalledUnitPassesSystemdAnalyzeVerify) {
  ASSERT_EQ(apply(declare(text())).code, 0);
  const std::string unit = SystemdNamespace::instance().unitDir() + "/" + service();
  ASSERT_TRUE(fs::exists(unit));
  const bool hadMarker = fs::exists("/run/systemd/systemd-units-load");
  Result v = runCommand({"sh", "-c", "systemd-analyze verify --man=no '" + unit + "' 2>&1"});
  if (!hadMarker) fs::remove("/run/systemd/systemd-units-load");
  EXPECT_EQ(v.code, 0) << v.out;
  EXPECT_EQ(v.out, "") << "systemd-analyze verify warned about the unit mesh-host wrote";
}

TEST_P(Process, NoOpCycleCallsNothing) {
  auto decl = declare(text());
  ASSERT_EQ(apply(decl).code, 0);
  Result r = apply(decl);
  auto calls = r.json()["summary"]["supervisor"];
  EXPECT_EQ(calls["start"], 0) << calls.dump();
  EXPECT_EQ(calls["restart"], 0) << calls.dump();
  EXPECT_EQ(calls["reload"], 0) << calls.dump();
  EXPECT_EQ(calls["install"], 0) << calls.dump();
}

TEST_P(Process, HumanLinesFollowTheContract) {
  auto decl = declare(text());
  Result first = mesh({"apply", decl});
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_NE(first.out.find(fmt::format("created {} ({}): 1 file(s), running as {}\n", id(), module,
                                       service())),
            std::string::npos)
      << first.out;
  setSecret("second");
  Result second = mesh({"apply", decl});
  EXPECT_NE(second.out.find(fmt::format("updated {} ({}): restarted {}: restart-on {}.key\n", id(),
                                        module, service(), module)),
            std::string::npos)
      << second.out;
}

TEST_P(Process, LostStateNeverRestarts) {
  auto decl = declare(text());
  ASSERT_EQ(apply(decl).code, 0);
  const Pid pid = running();
  for (const char* f : {"state.db", "state.db-wal", "state.db-shm"})
    fs::remove(stateDir() + "/" + f);
  Result r = apply(decl);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto o = outcomeOf(r.json(), id());
  EXPECT_EQ(o["outcome"], "unchanged") << o.dump();
  EXPECT_EQ(o["reason"], "adopted");
  EXPECT_EQ(running(), pid);
}

TEST_P(Process, CredentialChangeRestartsOnce) {
  auto decl = declare(text());
  ASSERT_EQ(apply(decl).code, 0);
  const Pid before = running();
  setSecret("rotated");
  Result r = apply(decl);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto o = outcomeOf(r.json(), id());
  EXPECT_EQ(o["outcome"], "updated") << o.dump();
  EXPECT_EQ(o["restarted"], true);
  EXPECT_EQ(o["reason"], "restart-on " + module + ".key");
  const Pid after = running();
  EXPECT_NE(after, before);
  EXPECT_EQ(serviceStatus()["restarts_by_mesh_host"], 1);
  Result again = apply(decl);
  EXPECT_EQ(outcomeOf(again.json(), id())["outcome"], "unchanged");
  EXPECT_EQ(running(), after);
}

// A plan of a config change says the apply would restart the service — in the
// future tense, text and JSON alike — and restarts nothing.
TEST_P(Process, APlanSaysItWouldRestart) {
  ASSERT_EQ(apply(declare(text())).code, 0);
  const Pid before = running();
  const auto changed = declare(text("two"), "two.toml");
  Result p = plan(changed);
  EXPECT_EQ(p.code, 3) << p.out << p.err;
  EXPECT_NE(p.out.find("would update " + id() + " (" + module + "): would restart " + service()),
            std::string::npos)
      << p.out;
  EXPECT_EQ(p.out.find("restarted"), std::string::npos) << p.out;
  auto o = outcomeOf(plan(changed, true).json(), id());
  EXPECT_EQ(o["would"], "restart") << o.dump();
  EXPECT_EQ(o["restarted"], false) << o.dump();
  EXPECT_EQ(running(), before);
}

TEST_P(Process, TwoCausesInOnePushRestartOnce) {
  ASSERT_EQ(apply(declare(text())).code, 0);
  setSecret("rotated");
  Result r = apply(declare(text("two")));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto j = r.json();
  int restarts = 0;
  for (const auto& o : j["outcomes"]) restarts += o["restarted"].get<bool>();
  EXPECT_EQ(restarts, 1) << r.out;
  EXPECT_EQ(outcomeOf(j, id())["reason"], fmt::format("restart-on {0}.key, {0}.config", module));
  EXPECT_EQ(serviceStatus()["restarts_by_mesh_host"], 1);
}

// reload-on: a service that reloads its config on SIGHUP. Each backend runs the unit's
// ExecReload= when it has one, and sends SIGHUP to the main process itself otherwise.
class ReloadingProcess : public ProcessNode {
 protected:
  // Without `execReload` the reload is SIGHUP to the main process, on both backends.
  std::string reloadText(const std::string& config, bool execReload = false) {
    if (reloadBundle.empty())
      reloadBundle = publish(makeArchive(
          {{"bin/svc",
            "#!/bin/sh\n"
            "trap 'echo \"reloaded: $(cat \"$MESH_CONFIG\")\" >> \"$MESH_RELOADS\"' HUP\n"
            "echo \"svc up: $(cat \"$MESH_CONFIG\")\"\n"
            "sleep 100000 &\n"
            "while :; do wait $!; done\n"},
           {"bin/reload",
            "#!/bin/sh\necho \"ExecReload ran\" >> \"$MESH_RELOADS\"\nkill -HUP \"$MAINPID\"\n"}},
          "chmod 755 bin/svc bin/reload && tar -cf out bin"));
    return fmt::format(R"(
[module.{0}.credential.key]
path = "/etc/{0}/key"
from = "{1}"

[module.{0}.file.config]
path = "/etc/{0}/config"
content = "{2}"

[module.{0}.process.runtime]
bundle = "{3}"
restart-on = ["{0}.key"]
reload-on = ["{0}.config"]
unit = {{ ExecStart = "{{bundle}}/bin/svc", Environment = ["MESH_CONFIG={{root}}/etc/{0}/config", "MESH_RELOADS={{root}}/reloads"]{4} }}
)",
                       module, secretFile, config, reloadBundle,
                       execReload ? ", ExecReload = \"{bundle}/bin/reload\"" : "");
  }

  // The lines the service wrote on each SIGHUP, once there are `n` of them (a
  // reload's job may be done a moment before the service's handler ran).
  std::string reloads(size_t n) {
    std::string text;
    for (int i = 0; i < 500; ++i) {
      std::ifstream in(at("/reloads"));
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      if (static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) >= n) break;
      ::poll(nullptr, 0, 10);
    }
    return text;
  }

  Pid running() {
    auto s = serviceStatus();
    EXPECT_TRUE(s.value("active", false)) << s.dump();
    return {s.value("pid", 0), s.value("since", std::string())};
  }

  std::string reloadBundle;
};

TEST_P(ReloadingProcess, AReloadOnChangeReloadsTheServiceInPlace) {
  ASSERT_EQ(apply(declare(reloadText("one"))).code, 0);
  const Pid before = running();
  Result r = apply(declare(reloadText("two"), "two.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = r.json();
  auto o = outcomeOf(j, id());
  EXPECT_EQ(o["outcome"], "updated") << o.dump();
  EXPECT_EQ(o["reason"], "reload-on " + module + ".config");
  EXPECT_EQ(o["detail"], "reloaded " + service());
  EXPECT_EQ(o["restarted"], false);
  EXPECT_EQ(j["summary"]["supervisor"]["restart"], 0) << r.out;
  EXPECT_EQ(j["summary"]["supervisor"]["reload_service"], 1) << r.out;
  EXPECT_EQ(reloads(1), "reloaded: two\n");
  EXPECT_EQ(running(), before) << "a reload keeps the pid";
  EXPECT_EQ(serviceStatus()["restarts_by_mesh_host"], 0);
  Result again = apply(declare(reloadText("two"), "two.toml"));
  EXPECT_EQ(outcomeOf(again.json(), id())["outcome"], "unchanged");
  EXPECT_EQ(again.json()["summary"]["supervisor"]["reload_service"], 0);
  EXPECT_EQ(running(), before);
}

TEST_P(ReloadingProcess, AReloadRunsTheDeclaredExecReload) {
  ASSERT_EQ(apply(declare(reloadText("one", true))).code, 0);
  const Pid before = running();
  Result r = apply(declare(reloadText("two", true), "two.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto o = outcomeOf(r.json(), id());
  EXPECT_EQ(o["reason"], "reload-on " + module + ".config") << o.dump();
  EXPECT_EQ(o["detail"], "reloaded " + service());
  // The declared ExecReload= ran (with $MAINPID and the service's environment) and sent
  // the service its SIGHUP; mesh-host sent none of its own.
  EXPECT_EQ(reloads(2), "ExecReload ran\nreloaded: two\n");
  EXPECT_EQ(running(), before) << "a reload keeps the pid";
}

TEST_P(ReloadingProcess, APlanSaysItWouldReload) {
  ASSERT_EQ(apply(declare(reloadText("one"))).code, 0);
  const Pid before = running();
  Result p = plan(declare(reloadText("two"), "two.toml"), true);
  EXPECT_EQ(p.code, 3) << p.out << p.err;
  auto o = outcomeOf(p.json(), id());
  EXPECT_EQ(o["would"], "reload") << o.dump();
  EXPECT_EQ(o["detail"], "would reload " + service());
  EXPECT_EQ(running(), before);
}

TEST_P(ReloadingProcess, ARestartAndAReloadInOneCycleMakeOneRestart) {
  ASSERT_EQ(apply(declare(reloadText("one"))).code, 0);
  const Pid before = running();
  setSecret("rotated");
  Result r = apply(declare(reloadText("two"), "two.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = r.json();
  auto o = outcomeOf(j, id());
  EXPECT_EQ(o["reason"], fmt::format("restart-on {0}.key; reload-on {0}.config", module));
  EXPECT_EQ(o["detail"], "restarted " + service());
  EXPECT_EQ(j["summary"]["supervisor"]["restart"], 1) << r.out;
  EXPECT_EQ(j["summary"]["supervisor"]["reload_service"], 0) << r.out;
  EXPECT_NE(running(), before);
  EXPECT_FALSE(fs::exists(at("/reloads"))) << "the restart wins: no reload";
}

TEST_P(Process, UnitChangeRestarts) {
  ASSERT_EQ(apply(declare(text())).code, 0);
  const Pid before = running();
  Result r = apply(declare(text("one", ", \"EXTRA=1\"")));
  auto o = outcomeOf(r.json(), id());
  EXPECT_EQ(o["outcome"], "updated") << o.dump();
  EXPECT_EQ(o["reason"], "declared");
  EXPECT_EQ(o["restarted"], true);
  EXPECT_NE(running(), before);
}

// Every crash point between recording a change and restarting: the next apply
// restarts exactly once, and the one after restarts nothing.
class CrashPoints : public ProcessNode {
 protected:
  void crashAndRecover(const char* point, const std::string& changedText, bool secretToo) {
    ASSERT_EQ(apply(declare(text())).code, 0);
    auto s = serviceStatus();
    const int pidBefore = s["pid"];
    if (secretToo) setSecret("rotated");
    auto changed = declare(changedText, "changed.toml");
    Result crashed = mesh({"apply", changed, "--json"}, {{"MESH_HOST_CRASH_AT", point}});
    ASSERT_EQ(crashed.code, kCrashExitCode) << point << ": " << crashed.out << crashed.err;

    Result next = apply(changed);
    ASSERT_EQ(next.code, 0) << next.out << next.err;
    auto o = outcomeOf(next.json(), id());
    auto after = serviceStatus();
    EXPECT_NE(after["pid"], pidBefore) << point << ": the owed restart was lost";
    EXPECT_TRUE(after["active"].get<bool>());
    if (std::string(point) == crash::kAfterRestart) {
      // The restart happened before the crash; only its bookkeeping was lost.
      // The service started after the restart was owed, so it is not done twice.
      EXPECT_EQ(o["restarted"], false) << o.dump();
    } else {
      EXPECT_EQ(o["restarted"], true) << point << ": " << o.dump();
      EXPECT_EQ(after["restarts_by_mesh_host"], 1) << point << ": " << o.dump();
    }

    Result noop = apply(changed);
    auto n = outcomeOf(noop.json(), id());
    EXPECT_EQ(n["outcome"], "unchanged") << point << ": " << n.dump();
    EXPECT_EQ(serviceStatus()["pid"], after["pid"]) << point;
  }
};

TEST_P(CrashPoints, AfterChangeRecorded) {
  crashAndRecover(crash::kAfterChangeRecorded, text("two"), false);
}
TEST_P(CrashPoints, AfterUnitInstalled) {
  crashAndRecover(crash::kAfterUnitInstalled, text("one", ", \"EXTRA=1\""), false);
}
TEST_P(CrashPoints, BeforeRestart) {
  crashAndRecover(crash::kBeforeRestart, text(), true);
}
TEST_P(CrashPoints, AfterRestart) {
  crashAndRecover(crash::kAfterRestart, text("two"), true);
}
// Before the change is made, its restart is owed already (intent first) …
TEST_P(CrashPoints, AfterIntent) {
  crashAndRecover(crash::kAfterIntent, text("two"), false);
}
// … so a crash after the change, before its record, cannot lose it: the next
// cycle finds the config as wanted (`unchanged`) and still restarts once.
TEST_P(CrashPoints, BeforeRecord) {
  crashAndRecover(crash::kBeforeRecord, text("two"), false);
}
TEST_P(CrashPoints, BeforeRecordOfACredential) {
  crashAndRecover(crash::kBeforeRecord, text(), true);
}
// Files are written in batches (util/write_batch.hh): a kill after the config's
// temp file is synced, before its rename, and one after the rename, before its
// record, neither loses the restart nor makes two.
TEST_P(CrashPoints, InTheBatchBeforeTheRename) {
  crashAndRecover(crash::kBeforeRename, text("two"), false);
}
TEST_P(CrashPoints, InTheBatchAfterTheRename) {
  crashAndRecover(crash::kBatchInPlace, text("two"), false);
}
TEST_P(CrashPoints, InTheBatchAfterTheRenameOfACredential) {
  crashAndRecover(crash::kBatchInPlace, text(), true);
}

// A process restarting on an archive: a crash after the new tree is switched in,
// while the old one is still being removed, neither loses the restart nor
// leaves the old tree behind.
TEST_P(CrashPoints, AfterAnArchiveSwitch) {
  auto site = [&](const std::string& v) {
    return publish(makeArchive({{"index", v}}, "tar -cf out index"));
  };
  auto text = [&](const std::string& siteBundle) {
    return fmt::format(R"(
[module.{0}.archive.site]
path = "/srv/{0}/site"
bundle = "{1}"

[module.{0}.process.runtime]
bundle = "{2}"
restart-on = ["{0}.site"]
unit = {{ ExecStart = "{{bundle}}/bin/svc", Restart = "always", Environment = ["MESH_CONFIG={{root}}/srv/{0}/site/index"] }}
)",
                       module, siteBundle, bundle);
  };
  ASSERT_EQ(apply(declare(text(site("v1")))).code, 0);
  const int pidBefore = serviceStatus()["pid"];
  const auto changed = declare(text(site("v2")), "changed.toml");
  Result crashed = mesh({"apply", changed}, {{"MESH_HOST_CRASH_AT", crash::kAfterSwitch}});
  ASSERT_EQ(crashed.code, kCrashExitCode) << crashed.out << crashed.err;
  EXPECT_EQ(read(fmt::format("/srv/{}/site/index", module)), "v2");

  Result next = apply(changed);
  ASSERT_EQ(next.code, 0) << next.out << next.err;
  EXPECT_EQ(outcomeOf(next.json(), id())["restarted"], true) << next.out;
  EXPECT_NE(serviceStatus()["pid"], pidBefore) << "the owed restart was lost";
  for (const auto& e : std::filesystem::directory_iterator(at("/srv/" + module)))
    EXPECT_FALSE(e.path().filename().string().starts_with(".mesh-")) << e.path();
  Result noop = apply(changed);
  EXPECT_EQ(outcomeOf(noop.json(), id())["outcome"], "unchanged") << noop.out;
}

// An intent whose change never happened is cancelled, not paid: the crash came
// before the config was written, and the operator went back to the old one.
TEST_P(CrashPoints, AnIntentWhoseChangeNeverHappenedIsCancelled) {
  const auto original = declare(text());
  ASSERT_EQ(apply(original).code, 0);
  const int pidBefore = serviceStatus()["pid"];
  Result crashed = mesh({"apply", declare(text("two"), "changed.toml"), "--json"},
                        {{"MESH_HOST_CRASH_AT", crash::kAfterIntent}});
  ASSERT_EQ(crashed.code, kCrashExitCode) << crashed.out << crashed.err;
  for (int i = 0; i < 2; ++i) {
    Result r = apply(original);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(outcomeOf(r.json(), id())["outcome"], "unchanged") << r.out;
    EXPECT_EQ(outcomeOf(r.json(), id())["restarted"], false) << r.out;
    EXPECT_EQ(serviceStatus()["pid"], pidBefore) << "apply " << i;
  }
}

// plan shows the unit file as it would become, as a unified diff.
TEST_P(Process, PlanShowsAUnifiedDiffOfTheRenderedUnit) {
  ASSERT_EQ(apply(declare(text())).code, 0);
  Result r = plan(declare(text("one", ", \"EXTRA=1\""), "changed.toml"));
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find(fmt::format("--- a{}", service())), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("+Environment=EXTRA=1"), std::string::npos) << r.out;
}

// A process update that fails before installing anything (its bundle is not in
// the blob store) owes nothing: going back to the old declaration restarts
// nothing, since neither its unit nor its bundle ever changed.
TEST_P(Process, AFailedUpdateOwesNoRestartOnceReverted) {
  const auto original = declare(text());
  ASSERT_EQ(apply(original).code, 0);
  const int pidBefore = serviceStatus()["pid"];
  std::string broken = text();
  broken.replace(broken.find(bundle), bundle.size(), "sha256:" + std::string(64, 'a'));
  Result failed = apply(declare(broken, "broken.toml"));
  ASSERT_EQ(failed.code, 1) << failed.out << failed.err;
  EXPECT_EQ(outcomeOf(failed.json(), id())["outcome"], "failed") << failed.out;
  Result back = apply(original);
  ASSERT_EQ(back.code, 0) << back.out << back.err;
  EXPECT_EQ(outcomeOf(back.json(), id())["outcome"], "unchanged") << back.out;
  EXPECT_EQ(outcomeOf(back.json(), id())["restarted"], false) << back.out;
  EXPECT_EQ(serviceStatus()["pid"], pidBefore);
}

// The system calls the crash sweeps below kill an apply at, each on its own (strace
// counts each apart): every way a write is made durable (a batch fsyncs each file and
// directory, from a few threads; SQLite uses fdatasync; syncfs no longer, kept as a
// guard) and every way one is put in place or
// taken away — the windows between a config written and the restart it owes
// recorded. (Calls an apply does not make run through at once: a guard for later code.)
const char* const kKillPoints[] = {"fsync",    "fdatasync", "syncfs", "rename",
                                   "renameat", "renameat2", "unlink", "unlinkat"};

// A real SIGKILL (strace) at the Nth fsync, then at the Nth call of each of the
// other kill points above, of an
// apply that changes the config a running service restarts on, for every N
// until the apply runs through: the next apply leaves the service restarted
// (running the new config), and the one after restarts nothing. Only the
// mesh-host process is traced, not the supervisors it starts. Both backends: under
// systemd a kill while mesh-host waits for a RestartUnit job leaves the job to
// systemd, which finishes it; the next apply finds the service started since the
// restart was owed, and pays it without a second restart.
TEST_P(CrashPoints, AKillAtEveryFsyncNeverLosesTheOwedRestart) {
  if (runCommand({"strace", "-V"}).code != 0) GTEST_SKIP() << "strace is not installed";
  // systemd counts restarts on request against the unit's start limit (5 in 10 s
  // by default) and refuses the sixth (Result=start-limit-hit): the sweep restarts
  // dozens of times a second, so its unit lifts the limit. (The builtin supervisor
  // has none; the [Unit] key is not its concern.)
  auto text = [this](const std::string& config) {
    std::string t = ProcessNode::text(config);
    const std::string key = "Restart = \"always\"";
    t.replace(t.find(key), key.size(), key + ", StartLimitIntervalSec = \"0\"");
    return t;
  };
  ASSERT_EQ(apply(declare(text("c0"))).code, 0);
  int round = 0;
  for (const std::string syscall : kKillPoints) {
    bool ranThrough = false;
    for (int n = 1; n <= 40 && !ranThrough; ++n) {
      const int pidBefore = serviceStatus()["pid"];
      const auto changed = declare(text(fmt::format("c{}", ++round)), "changed.toml");
      ranThrough = applyKilledAt(syscall, n, changed);
      Result next = apply(changed);
      ASSERT_EQ(next.code, 0) << syscall << " " << n << ": " << next.out << next.err;
      const auto after = serviceStatus();
      EXPECT_NE(after["pid"], pidBefore) << syscall << " " << n << ": the owed restart was lost";
      EXPECT_TRUE(after["active"].get<bool>()) << syscall << " " << n;
      Result noop = apply(changed);
      EXPECT_EQ(outcomeOf(noop.json(), id())["outcome"], "unchanged") << syscall << " " << n;
      EXPECT_EQ(serviceStatus()["pid"], after["pid"]) << syscall << " " << n << ": restarted twice";
    }
    EXPECT_TRUE(ranThrough) << "no apply ran through within 40 calls of " << syscall;
  }
}

// The reload twin: a SIGKILL at the Nth call of each kill point of an apply that
// changes a config the service reloads on; the next apply leaves the service
// reloaded for the new config (once more at most: a reload leaves no trace to judge
// it by), never restarted, and the one after reloads nothing.
TEST_P(ReloadingProcess, AKillAtEveryFsyncNeverLosesTheOwedReload) {
  if (runCommand({"strace", "-V"}).code != 0) GTEST_SKIP() << "strace is not installed";
  ASSERT_EQ(apply(declare(reloadText("c0"))).code, 0);
  const Pid pid = running();
  auto lines = [this] {
    std::ifstream in(at("/reloads"));
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  };
  int round = 0;
  for (const std::string syscall : kKillPoints) {
    bool ranThrough = false;
    for (int n = 1; n <= 40 && !ranThrough; ++n) {
      const size_t before = lines().size();
      const std::string config = fmt::format("c{}", ++round);
      const auto changed = declare(reloadText(config), "changed.toml");
      ranThrough = applyKilledAt(syscall, n, changed);
      Result next = apply(changed);
      ASSERT_EQ(next.code, 0) << syscall << " " << n << ": " << next.out << next.err;
      reloads(before + 1);
      const auto after = lines();
      ASSERT_GT(after.size(), before) << syscall << " " << n << ": the owed reload was lost";
      EXPECT_EQ(after.back(), "reloaded: " + config) << syscall << " " << n;
      EXPECT_LE(after.size(), before + 2) << syscall << " " << n << ": reloaded more than twice";
      EXPECT_EQ(running(), pid) << syscall << " " << n << ": restarted";
      Result noop = apply(changed);
      EXPECT_EQ(outcomeOf(noop.json(), id())["outcome"], "unchanged") << syscall << " " << n;
      EXPECT_EQ(noop.json()["summary"]["supervisor"]["reload_service"], 0) << syscall << " " << n;
    }
    EXPECT_TRUE(ranThrough) << "no apply ran through within 40 calls of " << syscall;
  }
}

TEST_P(Process, StoppedByHandIsStartedAgain) {
  auto decl = declare(text());
  ASSERT_EQ(apply(decl).code, 0);
  if (GetParam() == "systemd") {
    auto& ns = SystemdNamespace::instance();
    ASSERT_EQ(ns.ctl({"stop", service()}).code, 0);
  } else {
    // Stopping by hand under the builtin supervisor: kill its supervisor, then the service.
    auto status =
        nlohmann::json::parse(read("/var/lib/mesh-host/services/" + service() + "/status"));
    ::kill(status.value("supervisor_pid", 0), SIGKILL);
    ::kill(serviceStatus()["pid"].get<int>(), SIGKILL);
  }
  Result r = apply(decl);
  auto o = outcomeOf(r.json(), id());
  EXPECT_EQ(o["outcome"], "updated") << o.dump();
  EXPECT_EQ(o["reason"], "drift: not running");
  EXPECT_TRUE(serviceStatus()["active"].get<bool>());
}

TEST_P(Process, RebuiltBinaryRestartsNothing) {
  auto decl = declare(text());
  ASSERT_EQ(apply(decl).code, 0);
  const Pid pid = running();
  // Another copy of the binary, as after an upgrade.
  const std::string copy = work + "/mesh-host-upgraded";
  fs::copy_file(MESH_HOST_BIN, copy);
  fs::permissions(copy, fs::perms::owner_all);
  std::vector<std::string> argv = {copy, "apply",   decl,  "--json", "--root",
                                   root, "--blobs", blobs, "--node", "test"};
  argv.insert(argv.end(), extraArgs.begin(), extraArgs.end());
  Result r = runCommand(argv, extraEnv);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(outcomeOf(r.json(), id())["outcome"], "unchanged");
  EXPECT_EQ(running(), pid);
}

// A mesh-host whose unit files read differently (a header, a default key) restarts
// nothing: the want is what is declared, the file is rewritten and the supervisor
// reloaded, the service keeps its pid (the render-unit-v2 seam renders as such a
// mesh-host would).
TEST_P(Process, ANewUnitRenderingRestartsNothing) {
  // A second process restarts on the first: a re-rendered unit is no cause for it either.
  auto decl = declare(text() + fmt::format(R"(
[module.{0}.process.sidecar]
bundle = "{1}"
service = "{0}-sidecar.service"
restart-on = ["{0}.runtime"]
unit = {{ ExecStart = "{{bundle}}/bin/svc", Restart = "always", Environment = ["MESH_CONFIG={{root}}/etc/{0}/config"] }}
)",
                                           module, bundle));
  ASSERT_EQ(apply(decl).code, 0);
  const Pid pid = running();
  const std::map<std::string, std::string> upgraded = {{"MESH_HOST_FAULT", "render-unit-v2"}};
  Result planned = mesh({"plan", decl}, upgraded);
  EXPECT_NE(planned.out.find("would rewrite " + service() + ", not restarted"), std::string::npos)
      << planned.out;
  Result r = mesh({"apply", decl, "--json"}, upgraded);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto o = outcomeOf(r.json(), id());
  EXPECT_EQ(o["outcome"], "updated") << o.dump();
  EXPECT_EQ(o["reason"], "unit rendering changed (mesh-host upgraded)") << o.dump();
  EXPECT_EQ(o["restarted"], false) << o.dump();
  EXPECT_EQ(outcomeOf(r.json(), module + ".sidecar")["restarted"], false) << r.out;
  EXPECT_EQ(r.json()["summary"]["supervisor"]["restart"], 0) << r.out;
  EXPECT_EQ(r.json()["summary"]["supervisor"]["start"], 0) << r.out;
  EXPECT_EQ(running(), pid);
  // The file now reads the new way: the next cycle of that mesh-host is a no-op.
  Result again = mesh({"apply", decl, "--json"}, upgraded);
  EXPECT_EQ(outcomeOf(again.json(), id())["outcome"], "unchanged") << again.out;
  EXPECT_EQ(running(), pid);
  // A hand edit is still drift, and restarts (the file is not what mesh-host wrote).
  const std::string unitFile =
      GetParam() == "systemd" ? SystemdNamespace::instance().unitDir() + "/" + service() : "";
  if (!unitFile.empty()) {
    std::ofstream(unitFile, std::ios::app) << "# edited by hand\n";
    Result edited = mesh({"apply", decl, "--json"}, upgraded);
    EXPECT_EQ(outcomeOf(edited.json(), id())["reason"], "drift: unit edited") << edited.out;
    EXPECT_NE(running(), pid);
  }
}

// A record written by a mesh-host of the earlier want scheme (the rendered text in the
// want, no unit digest): the first cycle after the upgrade records the new want and
// restarts nothing.
TEST_P(Process, ARecordOfTheEarlierWantSchemeIsRerecordedWithoutARestart) {
  auto decl = declare(text());
  ASSERT_EQ(apply(decl).code, 0);
  const Pid pid = running();
  const std::string old = "sha256:" + std::string(64, '1');
  Result edit = runCommand({"sqlite3", "-batch", stateDir() + "/state.db",
                            fmt::format("UPDATE records SET want = '{}', wrote = '{}', observed = "
                                        "json_remove(observed, '$.unit') WHERE id = '{}'",
                                        old, old, id())});
  ASSERT_EQ(edit.code, 0) << edit.err;
  Result r = apply(decl);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto o = outcomeOf(r.json(), id());
  EXPECT_EQ(o["outcome"], "unchanged") << o.dump();
  EXPECT_NE(o["wrote"], old) << "the new want is recorded";
  EXPECT_EQ(r.json()["summary"]["supervisor"]["restart"], 0) << r.out;
  EXPECT_EQ(running(), pid);
}

TEST_P(Process, RemovedProcessIsStopped) {
  ASSERT_EQ(apply(declare(text())).code, 0);
  const int pid = running().pid;
  Result r = apply(declare("node = \"test\"\nempty = true\n", "empty.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto o = outcomeOf(r.json(), id());
  EXPECT_EQ(o["outcome"], "removed");
  EXPECT_EQ(o["detail"], "stopped and removed " + service());
  if (GetParam() == "builtin") {
    EXPECT_NE(::kill(pid, 0), 0) << "the service still runs";
    EXPECT_FALSE(fs::exists(stateDir() + "/services/" + service()));
  } else {
    EXPECT_FALSE(fs::exists(SystemdNamespace::instance().unitDir() + "/" + service()));
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, Process, ::testing::Values("builtin", "systemd"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Backends, ReloadingProcess, ::testing::Values("builtin", "systemd"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Backends, SystemdProcess, ::testing::Values("systemd"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Backends, CrashPoints, ::testing::Values("builtin", "systemd"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mesh::e2e
