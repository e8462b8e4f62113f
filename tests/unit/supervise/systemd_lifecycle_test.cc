// The systemd backend against a real systemd: observe, install, start, restart,
// stop, uninstall, failures — each as mesh-host's reconcile uses it.
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "backend_fixture.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::testing {
namespace {

int64_t nowUs() {
  timeval tv{};
  ::gettimeofday(&tv, nullptr);
  return int64_t{tv.tv_sec} * 1000000 + tv.tv_usec;
}

// The last NSpid field: the pid as the innermost PID namespace sees it.
pid_t innermostPid(pid_t hostPid) {
  std::ifstream in("/proc/" + std::to_string(hostPid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("NSpid:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      pid_t p = 0;
      for (pid_t f; fields >> f;) p = f;
      return p;
    }
  return 0;
}

std::string cmdline(pid_t hostPid) {
  auto text = readFile("/proc/" + std::to_string(hostPid) + "/cmdline").value_or("");
  for (auto& c : text)
    if (c == '\0') c = ' ';
  return text;
}

using SystemdLifecycleTest = SystemdBackendTest;

TEST_F(SystemdLifecycleTest, ObserveUnknownServiceIsNotInstalled) {
  auto st = observe1(service());
  EXPECT_FALSE(st.installed);
  EXPECT_EQ(st.installedText, "");
  EXPECT_FALSE(st.active);
  EXPECT_EQ(st.activeState, "inactive");
  EXPECT_EQ(st.pid, 0);
  EXPECT_EQ(st.sinceUs, 0);
  EXPECT_EQ(sup->name(), "systemd");
  EXPECT_TRUE(sup->unsupportedKeys(unit(service("b"))).empty());
}

TEST_F(SystemdLifecycleTest, InstallAndStartRunsARealProcessSeenFromTheHost) {
  auto name = service();
  auto u = unit(name);
  int64_t before = nowUs();
  sup->install(u);
  sup->start(name);

  auto st = observe1(name);
  EXPECT_TRUE(st.installed);
  EXPECT_EQ(st.installedText, u.text);
  EXPECT_TRUE(st.enabled);
  EXPECT_TRUE(st.active);
  EXPECT_EQ(st.activeState, "active");
  EXPECT_GT(st.pid, 0);
  EXPECT_GE(st.sinceUs, before);
  EXPECT_LE(st.sinceUs, nowUs());
  EXPECT_EQ(st.crashRestarts, 0);

  // Enabled the way `systemctl enable` does it, so it starts at boot.
  auto link = ns->unitDir() + "/multi-user.target.wants/" + name;
  EXPECT_EQ(std::filesystem::read_symlink(link).string(), "../" + name);
  EXPECT_EQ(ns->property(name, "UnitFileState"), "enabled");
  EXPECT_EQ(lstatPath(ns->unitDir() + "/" + name)->st_mode & 07777, 0644u);

  // A real process on this machine: the unit's cgroup holds it, and its pid in
  // systemd's namespace is the MainPID the backend reported.
  auto pids = ns->hostPids(name);
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_EQ(innermostPid(pids[0]), st.pid);
  EXPECT_EQ(cmdline(pids[0]), "/bin/sleep infinity ");
}

TEST_F(SystemdLifecycleTest, ObservingAgainChangesNothing) {
  auto name = service();
  sup->install(unit(name));
  sup->start(name);
  auto first = observe1(name);
  auto reloads = sup->reloadCount();

  auto second = observe1(name);
  auto cheap = observe1(name, false);
  EXPECT_EQ(second.pid, first.pid);
  EXPECT_EQ(second.sinceUs, first.sinceUs);
  EXPECT_EQ(second.installedText, first.installedText);
  EXPECT_TRUE(cheap.active);
  EXPECT_EQ(cheap.installedText, first.installedText);
  EXPECT_EQ(sup->reloadCount(), reloads);
  EXPECT_EQ(ns->property(name, "MainPID"), std::to_string(first.pid));
  EXPECT_EQ(ns->property(name, "NRestarts"), "0");
}

TEST_F(SystemdLifecycleTest, ObserveReadsSeveralServicesInOneGo) {
  auto a = service("a"), b = service("b"), c = service("c");
  sup->install(unit(a));
  sup->install(unit(b));
  sup->start(a);
  auto all = sup->observe({a, b, c});
  ASSERT_EQ(all.size(), 3u);
  EXPECT_TRUE(all[a].active);
  EXPECT_TRUE(all[b].installed);
  EXPECT_FALSE(all[b].active);
  EXPECT_FALSE(all[c].installed);
  EXPECT_FALSE(all[c].enabled);
}

TEST_F(SystemdLifecycleTest, RestartGivesANewMainPid) {
  auto name = service();
  sup->install(unit(name));
  sup->start(name);
  auto before = observe1(name);
  auto reloads = sup->reloadCount();
  sup->restart(name);
  auto after = observe1(name);
  EXPECT_TRUE(after.active);
  EXPECT_GT(after.pid, 0);
  EXPECT_NE(after.pid, before.pid);
  EXPECT_GT(after.sinceUs, before.sinceUs);
  EXPECT_EQ(after.crashRestarts, 0);  // ours, not a crash
  EXPECT_EQ(sup->reloadCount(), reloads);
}

TEST_F(SystemdLifecycleTest, StopMakesItInactive) {
  auto name = service();
  sup->install(unit(name));
  sup->start(name);
  sup->stop(name);
  auto st = observe1(name);
  EXPECT_TRUE(st.installed);
  EXPECT_FALSE(st.active);
  EXPECT_EQ(st.activeState, "inactive");
  EXPECT_EQ(st.pid, 0);
  EXPECT_TRUE(ns->hostPids(name).empty());
  sup->stop(name);  // stopping a stopped service is fine
}

TEST_F(SystemdLifecycleTest, UninstallRemovesTheUnitAndReloadsAtFlush) {
  auto name = service();
  sup->install(unit(name));
  sup->start(name);
  sup->stop(name);
  auto reloads = sup->reloadCount();
  sup->uninstall(name);
  EXPECT_FALSE(lstatPath(ns->unitDir() + "/" + name));
  EXPECT_FALSE(lstatPath(ns->unitDir() + "/multi-user.target.wants/" + name));
  auto st = observe1(name);
  EXPECT_FALSE(st.installed);
  EXPECT_FALSE(st.active);
  EXPECT_EQ(sup->reloadCount(), reloads);  // owed, not yet made
  sup->flush();
  EXPECT_EQ(sup->reloadCount(), reloads + 1);
  EXPECT_EQ(ns->property(name, "LoadState"), "not-found");
  sup->flush();
  EXPECT_EQ(sup->reloadCount(), reloads + 1);
}

// The settle rule (supervisor.hh): a Type=simple start job is done at the fork;
// settle() tells the start that did not stay up, with how it ended.
TEST_F(SystemdLifecycleTest, ProgramThatFailsAtOnceFailsTheStart) {
  auto name = service();
  sup->install(unit(name, {{"ExecStart", "/bin/false"}, {"Restart", "no"}}));
  sup->start(name);
  auto failed = sup->settle({name});
  ASSERT_EQ(failed.count(name), 1u) << "a service that exits 1 at once settled";
  const std::string m = failed[name];
  EXPECT_NE(m.find("exited with status 1 within 100ms of its start"), std::string::npos) << m;
  EXPECT_NE(m.find("see journalctl -u " + name), std::string::npos) << m;
  EXPECT_EQ(observe1(name).activeState, "failed");
}

// Regression (issue 26, item 3): with Restart= a service that exits at once is
// "activating (auto-restart)", not "failed", and the old check passed it; it is
// held (the cycle must not start it over the backoff).
TEST_F(SystemdLifecycleTest, ProgramThatFailsAtOnceUnderRestartAlwaysFailsTheStart) {
  auto name = service();
  sup->install(
      unit(name, {{"ExecStart", "/bin/false"}, {"Restart", "always"}, {"RestartSec", "30"}}));
  sup->start(name);
  auto failed = sup->settle({name});
  ASSERT_EQ(failed.count(name), 1u) << "a crash-looping service settled";
  EXPECT_NE(failed[name].find("(waiting to be restarted by Restart=)"), std::string::npos)
      << failed[name];
  auto st = observe1(name);
  EXPECT_TRUE(st.held) << st.activeState;
  EXPECT_FALSE(st.running);
}

// Issue 26, item 3: the reason names the service's last line of output, as the
// builtin supervisor's does — read from the journal, this run's entries only.
TEST_F(SystemdLifecycleTest, ProgramThatFailsAtOnceNamesItsLastLineOfOutput) {
  auto name = service();
  sup->install(unit(name, {{"ExecStart",
                            "/bin/sh -c 'echo starting; echo config 7 is broken; "
                            "exit 1'"},
                           {"Restart", "no"}}));
  sup->start(name);
  const std::string m = sup->settle({name})[name];
  EXPECT_NE(m.find("exited with status 1 within 100ms of its start: config 7 is broken; see "
                   "journalctl -u " +
                   name),
            std::string::npos)
      << m;
}

// Output of an earlier run is never shown: the journal is read for this run's
// invocation id. (The second run writes nothing.)
TEST_F(SystemdLifecycleTest, TheLastLineIsNeverAnEarlierRuns) {
  auto name = service();
  sup->install(
      unit(name, {{"ExecStart", "/bin/sh -c 'echo first run broke; exit 1'"}, {"Restart", "no"}}));
  sup->start(name);
  const std::string first = sup->settle({name})[name];
  ASSERT_NE(first.find(": first run broke;"), std::string::npos) << first;
  sup->install(unit(name, {{"ExecStart", "/bin/sh -c 'exit 2'"}, {"Restart", "no"}}));
  sup->start(name);
  const std::string second = sup->settle({name})[name];
  EXPECT_EQ(second, "exited with status 2 within 100ms of its start; see journalctl -u " + name);
}

// Under Restart= the unit may run again before it is judged: the line is the
// failed run's, not the next one's (which is up, and wrote its own line, before
// settle() looks).
TEST_F(SystemdLifecycleTest, TheLastLineIsTheFailedRunsNotTheNextOnes) {
  auto name = service();
  const std::string marker = ns->dir() + "/" + name + ".ran";
  std::filesystem::remove(marker);
  sup->install(unit(name, {{"ExecStart", "/bin/sh -c 'if [ -e " + marker +
                                             " ]; then echo later run; exec sleep 1000; fi; "
                                             ": > " +
                                             marker + "; echo first run broke; exit 1'"},
                           {"Restart", "always"},
                           {"RestartSec", "50ms"}}));
  sup->start(name);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ns->property(name, "NRestarts") != "1" || ns->property(name, "SubState") != "running") {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "Restart= did not run it again";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::string m = sup->settle({name})[name];
  EXPECT_NE(m.find(" within 100ms of its start: first run broke (restarted by Restart= as pid"),
            std::string::npos)
      << m;
  EXPECT_EQ(m.find("later run"), std::string::npos) << m;
}

// A start job that fails (Type=oneshot) names the run's last line too.
TEST_F(SystemdLifecycleTest, AFailedStartJobNamesItsLastLineOfOutput) {
  auto name = service();
  sup->install(unit(name, {{"ExecStart", "/bin/sh -c 'echo the oneshot broke >&2; exit 7'"},
                           {"Type", "oneshot"}}));
  try {
    sup->start(name);
    FAIL() << "start of a oneshot that exits 7 succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "start of " + name +
                  " failed: failed (Result=exit-code, exit status 7): the oneshot broke; see "
                  "journalctl -u " +
                  name);
  }
}

// A journal that cannot be read: the reason is what it was before, without the
// line, and it costs no wait.
TEST_F(SystemdLifecycleTest, AJournalThatCannotBeReadLeavesTheLineOut) {
  auto o = options();
  o.journalDir = ns->dir() + "/no-journal-here";
  sup = supervise::openSystemd(o);
  auto name = service();
  sup->install(unit(
      name, {{"ExecStart", "/bin/sh -c 'echo config 7 is broken; exit 1'"}, {"Restart", "no"}}));
  sup->start(name);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string m = sup->settle({name})[name];
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(m, "exited with status 1 within 100ms of its start; see journalctl -u " + name);
  EXPECT_LT(took, supervise::kSettle + std::chrono::milliseconds(150))
      << "waited for a journal that is not there";
}

TEST_F(SystemdLifecycleTest, AServiceThatStaysUpSettles) {
  auto name = service();
  sup->install(unit(name));
  sup->start(name);
  EXPECT_TRUE(sup->settle({name}).empty());
}

TEST_F(SystemdLifecycleTest, FailedJobSaysHowTheProgramEnded) {
  // Type=oneshot: the start job itself waits for the program, and fails with it.
  auto name = service();
  sup->install(unit(name, {{"ExecStart", "/bin/sh -c 'exit 7'"}, {"Type", "oneshot"}}));
  try {
    sup->start(name);
    FAIL() << "start of a oneshot that exits 7 succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "start of " + name +
                                         " failed: failed (Result=exit-code, exit status 7); "
                                         "see journalctl -u " +
                                         name);
  }
}

TEST_F(SystemdLifecycleTest, MissingProgramFailsTheStartSayingSo) {
  auto name = service();
  sup->install(unit(name, {{"ExecStart", "/nonexistent/mesh-test/bin/app serve"}}));
  std::string m;
  try {
    sup->start(name);
    m = sup->settle({name})[name];
  } catch (const Error& e) {
    m = e.what();
  }
  EXPECT_NE(m.find("203/EXEC"), std::string::npos) << m;
}

TEST_F(SystemdLifecycleTest, StartOfAnUnknownServiceSaysNotFound) {
  auto name = service();
  try {
    sup->start(name);
    FAIL() << "started a service that has no unit";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("start of " + name + " failed: Unit " + name + " not found"),
              std::string::npos)
        << m;
  }
  EXPECT_NO_THROW(sup->stop(name));  // nothing runs: nothing to stop
}

TEST_F(SystemdLifecycleTest, CrashRestartsAreCounted) {
  auto name = service();
  sup->install(unit(name, {{"ExecStart", "/bin/sh -c 'sleep 0.3; exit 3'"},
                           {"Restart", "always"},
                           {"RestartSec", "100ms"}}));
  sup->start(name);
  int64_t restarts = 0;
  for (int i = 0; i < 100 && restarts == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    restarts = observe1(name).crashRestarts;
  }
  EXPECT_GE(restarts, 1);
  sup->stop(name);
}

TEST(SystemdConnectTest, UnreachableBusIsAnInputErrorSayingWhatToDo) {
  supervise::Options o;
  o.busAddress = "unix:path=/nonexistent/mesh-test/bus";
  try {
    supervise::openSystemd(o);
    FAIL() << "connected to a bus that does not exist";
  } catch (const InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("--supervisor systemd: cannot reach systemd over D-Bus "
                     "(unix:path=/nonexistent/mesh-test/bus)"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("--supervisor builtin"), std::string::npos) << m;
  }
}

TEST_F(SystemdLifecycleTest, ServiceNamesAreChecked) {
  EXPECT_THROW(sup->observe({"../evil.service"}), Error);
  EXPECT_THROW(sup->install(unit("demo")), Error);
}

}  // namespace
}  // namespace mesh::testing
