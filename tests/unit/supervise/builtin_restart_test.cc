// Restart=, RestartSec= with backoff, TimeoutStopSec=.
#include "builtin_fixture.hh"
#include "util/error.hh"

namespace mesh::supervise::test {
namespace {

TEST_F(BuiltinTest, RestartAlwaysBringsBackAKilledService) {
  pid_t old = startUnit("demo.service", {{"ExecStart", "/bin/sleep 1000"}, {"Restart", "always"}});
  ASSERT_GT(old, 0);
  ASSERT_EQ(::kill(old, SIGKILL), 0);
  ASSERT_TRUE(awaitStatus("demo.service", [&](const builtin::Status& s) {
    return s.state == "active" && s.pid != old && s.pid > 0;
  })) << log("demo.service");
  auto s = observe("demo.service");
  EXPECT_TRUE(s.active);
  EXPECT_NE(s.pid, old);
  EXPECT_TRUE(alive(s.pid));
  EXPECT_EQ(s.crashRestarts, 1);
  EXPECT_EQ(status("demo.service").lastExit, "killed by signal 9 (KILL)");
}

TEST_F(BuiltinTest, RestartOnFailureIgnoresACleanExit) {
  std::string go = dir + "/go";
  startUnit("demo.service",
            {{"ExecStart", "/bin/sh -c 'while [ ! -e " + go + " ]; do sleep 0.02; done; exit 0'"},
             {"Restart", "on-failure"}});
  atomicWrite(go, "", 0644);
  ASSERT_TRUE(awaitStatus("demo.service", [](const auto& s) { return s.state == "inactive"; }));
  auto s = observe("demo.service");
  EXPECT_FALSE(s.active);
  EXPECT_EQ(s.activeState, "inactive");
  EXPECT_EQ(s.crashRestarts, 0);
}

TEST_F(BuiltinTest, RestartNoLeavesAFailedServiceDown) {
  std::string go = dir + "/go";
  pid_t pid = startUnit("demo.service",
                        {{"ExecStart", "/bin/sh -c 'while [ ! -e " + go +
                                           " ]; do sleep 0.02; done; echo giving up; exit 4'"},
                         {"Restart", "no"}});
  pid_t supervisor = status("demo.service").supervisorPid;
  atomicWrite(go, "", 0644);
  ASSERT_TRUE(awaitStatus("demo.service", [](const auto& s) { return s.state == "failed"; }));
  EXPECT_TRUE(awaitGone(pid, 1000));
  EXPECT_TRUE(awaitGone(supervisor, 5000));  // nothing left to supervise
  auto s = observe("demo.service");
  EXPECT_FALSE(s.active);
  EXPECT_EQ(s.activeState, "failed");
  EXPECT_EQ(s.pid, 0);
  EXPECT_EQ(s.crashRestarts, 0);
  EXPECT_EQ(status("demo.service").lastExit, "exited with status 4");
  EXPECT_NE(log("demo.service").find("giving up\n"), std::string::npos);
}

TEST_F(BuiltinTest, QuickCrashesBackOffExponentially) {
  startUnit("demo.service", {{"ExecStart", "/bin/sh -c 'sleep 0.15; exit 1'"},
                             {"Restart", "on-failure"},
                             {"RestartSec", "50ms"}});
  ASSERT_TRUE(awaitStatus(
      "demo.service", [](const auto& s) { return s.crashRestarts >= 3; }, 20'000))
      << log("demo.service");
  std::string text = log("demo.service");
  auto first = text.find("restarting in 50ms");
  auto second = text.find("restarting in 100ms");
  auto third = text.find("restarting in 200ms");
  EXPECT_NE(first, std::string::npos) << text;
  EXPECT_NE(second, std::string::npos) << text;
  EXPECT_NE(third, std::string::npos) << text;
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
}

TEST_F(BuiltinTest, StopDuringBackoffStopsForGood) {
  startUnit("demo.service", {{"ExecStart", "/bin/sh -c 'sleep 0.15; exit 1'"},
                             {"Restart", "always"},
                             {"RestartSec", "1min"}});
  ASSERT_TRUE(awaitStatus("demo.service", [](const auto& s) { return s.state == "backoff"; }));
  EXPECT_EQ(observe("demo.service").activeState, "activating (auto-restart)");
  // As systemd's auto-restart: active (its supervisor will start it), not running,
  // and held — the cycle must not start it over the backoff.
  EXPECT_TRUE(observe("demo.service").active);
  EXPECT_FALSE(observe("demo.service").running);
  EXPECT_TRUE(observe("demo.service").held);
  sup->stop("demo.service");
  EXPECT_EQ(observe("demo.service").activeState, "inactive");
}

TEST_F(BuiltinTest, StartDuringBackoffStartsAtOnce) {
  startUnit("demo.service", {{"ExecStart", "/bin/sh -c 'sleep 0.15; exit 1'"},
                             {"Restart", "always"},
                             {"RestartSec", "1min"}});
  ASSERT_TRUE(awaitStatus("demo.service", [](const auto& s) { return s.state == "backoff"; }));
  sup->install(makeUnit("demo.service", {{"ExecStart", "/bin/sleep 1000"}}));
  sup->start("demo.service");
  auto s = observe("demo.service");
  EXPECT_TRUE(s.active);
  EXPECT_TRUE(alive(s.pid));
}

TEST_F(BuiltinTest, TimeoutStopSecKillsAServiceThatIgnoresTerm) {
  std::string ready = dir + "/ready";
  pid_t pid = startUnit("demo.service", {{"ExecStart", "/bin/sh -c \"trap '' TERM; touch " + ready +
                                                           "; while :; do sleep 0.05; done\""},
                                         {"TimeoutStopSec", "300ms"}});
  ASSERT_TRUE(awaitFile(ready));
  int64_t t0 = builtin::monotonicUs();
  sup->stop("demo.service");
  int64_t took = builtin::monotonicUs() - t0;
  EXPECT_GE(took, 300'000);
  EXPECT_LT(took, 5'000'000);
  EXPECT_TRUE(awaitGone(pid, 1000));
  EXPECT_EQ(status("demo.service").lastExit, "killed by signal 9 (KILL)");
  EXPECT_NE(log("demo.service").find("did not stop within 300ms: SIGKILL"), std::string::npos);
}

TEST_F(BuiltinTest, AGracefulServiceStopsWithoutWaitingForTheTimeout) {
  pid_t pid = startUnit("demo.service", {{"ExecStart", "/bin/sleep 1000"}});
  int64_t t0 = builtin::monotonicUs();
  sup->stop("demo.service");
  EXPECT_LT(builtin::monotonicUs() - t0, 5'000'000);
  EXPECT_TRUE(awaitGone(pid, 1000));
  EXPECT_EQ(status("demo.service").lastExit, "killed by signal 15 (TERM)");
}

// reload-on: without ExecReload=, SIGHUP to the main process; the pid stays.
TEST_F(BuiltinTest, AReloadSendsSighupAndKeepsThePid) {
  const std::string marks = dir + "/hup";
  pid_t pid = startUnit("demo.service",
                        {{"ExecStart", "/bin/sh -c 'trap \"echo hup >> " + marks +
                                           "\" HUP; sleep 100000 & while :; do wait $$!; done'"}});
  ASSERT_GT(pid, 0);
  sup->reloadService("demo.service");
  ASSERT_TRUE(awaitFile(marks)) << log("demo.service");
  EXPECT_EQ(observe("demo.service").pid, pid);
  EXPECT_TRUE(observe("demo.service").active);
  EXPECT_NE(log("demo.service").find("reload: sent SIGHUP to pid " + std::to_string(pid)),
            std::string::npos)
      << log("demo.service");
}

// With ExecReload=: it runs (with $MAINPID) and is waited for; its failure fails the reload.
TEST_F(BuiltinTest, AReloadRunsExecReloadWithMainpid) {
  const std::string out = dir + "/reloaded";
  pid_t pid =
      startUnit("demo.service", {{"ExecStart", "/bin/sleep 100000"},
                                 {"ExecReload", "/bin/sh -c 'echo $$MAINPID > " + out + "'"}});
  ASSERT_GT(pid, 0);
  sup->reloadService("demo.service");
  // Waited for: the file is there when the call returns.
  EXPECT_EQ(readFile(out).value_or(""), std::to_string(pid) + "\n");
  EXPECT_EQ(observe("demo.service").pid, pid);

  sup->install(makeUnit(
      "bad.service", {{"ExecStart", "/bin/sleep 100000"}, {"ExecReload", "/bin/sh -c 'exit 3'"}}));
  sup->start("bad.service");
  const pid_t badPid = observe("bad.service").pid;
  try {
    sup->reloadService("bad.service");
    ADD_FAILURE() << "a failed ExecReload= was a success";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ExecReload failed: exit status 3"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(observe("bad.service").pid, badPid) << "a failed reload leaves the process";
}

TEST_F(BuiltinTest, AReloadOfAServiceThatIsNotRunningFails) {
  sup->install(makeUnit("demo.service", {{"ExecStart", "/bin/sleep 100000"}}));
  EXPECT_THROW(sup->reloadService("demo.service"), Error);
  EXPECT_FALSE(observe("demo.service").active) << "a reload starts nothing";
}

// The settle rule (supervisor.hh): a process asleep with no child counts as started
// at once by the supervisor's own look; one that then exits within the settle time
// did not stay up, and settle() says how it ended (its supervisor waits to restart it).
TEST_F(BuiltinTest, AServiceThatDiesWithinTheSettleTimeDoesNotSettle) {
  startUnit("demo.service",
            {{"ExecStart", "/bin/sleep 0.03"}, {"Restart", "always"}, {"RestartSec", "30"}});
  auto failed = sup->settle({"demo.service"});
  ASSERT_EQ(failed.count("demo.service"), 1u) << "a service gone after 30 ms settled";
  EXPECT_NE(failed["demo.service"].find("exited with status 0 within 100ms of its start"),
            std::string::npos)
      << failed["demo.service"];
  EXPECT_NE(failed["demo.service"].find("(waiting to be restarted by Restart=)"), std::string::npos)
      << failed["demo.service"];
  EXPECT_TRUE(observe("demo.service").held);
}

TEST_F(BuiltinTest, AServiceThatStaysUpSettles) {
  startUnit("demo.service", {{"ExecStart", "/bin/sleep 1000"}});
  EXPECT_TRUE(sup->settle({"demo.service"}).empty());
}

}  // namespace
}  // namespace mesh::supervise::test
