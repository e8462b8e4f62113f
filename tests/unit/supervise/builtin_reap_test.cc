// The supervisor waits for its own service process only: a process that dies
// right after a restart is seen dying (its status, Restart=), never reaped and
// forgotten by a wait for "any child". And SIGTERM ends a supervisor whatever it
// is waiting for.
#include <sys/socket.h>

#include "builtin_fixture.hh"
#include "supervise/builtin/control.hh"

namespace mesh::supervise::test {
namespace {

class ReapTest : public BuiltinTest {
 protected:
  const KeyValues kSleeper = {{"ExecStart", "/bin/sleep 1000"}, {"TimeoutStopSec", "2"}};

  // Runs `call` and returns its error ("" when it succeeded).
  static std::string failureOf(const std::function<void()>& call) {
    try {
      call();
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }
};

// The new process exits within a millisecond of its exec: before the supervisor
// has even written "starting". It must be the restart's failure.
TEST_F(ReapTest, ARestartIntoAProcessThatDiesAtOnceFailsTheRestart) {
  for (int round = 1; round <= 3; ++round) {
    SCOPED_TRACE(round);
    pid_t first = startUnit("demo.service", kSleeper);
    ASSERT_TRUE(alive(first));
    sup->install(makeUnit("demo.service", {{"ExecStart", "/bin/sh -c 'exit 3'"}}));
    const int64_t t0 = builtin::monotonicUs();
    std::string failure = failureOf([&] { sup->restart("demo.service"); });
    EXPECT_LT(builtin::monotonicUs() - t0, 5'000'000);
    EXPECT_NE(failure.find("restart of demo.service failed: exited with status 3"),
              std::string::npos)
        << (failure.empty() ? "(it succeeded)" : failure);
    auto s = observe("demo.service");
    EXPECT_FALSE(s.active) << s.activeState << " pid " << s.pid;
    EXPECT_EQ(s.activeState, "failed");
    EXPECT_EQ(status("demo.service").lastExit, "exited with status 3");
    EXPECT_FALSE(alive(first));
    // Its supervisor is done with it, and gone.
    const pid_t supervisor = status("demo.service").supervisorPid;
    EXPECT_TRUE(awaitGone(supervisor, 5000));
  }
}

// Restart=always: a process that dies right after the restart is started
// again (and again: crash_restarts counts), and the supervisor stays
// responsive — the next restart and stop are answered at once, not after a
// 40 s wait for a process already gone.
TEST_F(ReapTest, ProcessDyingRightAfterARestartIsRestartedPerRestartAlways) {
  pid_t first = startUnit("demo.service", kSleeper);
  ASSERT_TRUE(alive(first));
  sup->install(makeUnit("demo.service", {{"ExecStart", "/bin/sh -c 'exit 3'"},
                                         {"Restart", "always"},
                                         {"RestartSec", "20ms"},
                                         {"TimeoutStopSec", "1"}}));
  std::string failure = failureOf([&] { sup->restart("demo.service"); });
  EXPECT_NE(failure.find("exited with status 3"), std::string::npos)
      << (failure.empty() ? "(it succeeded)" : failure);
  ASSERT_TRUE(awaitStatus(
      "demo.service", [](const builtin::Status& st) { return st.crashRestarts >= 2; }, 5000))
      << "status: " << status("demo.service").render() << "log:\n"
      << log("demo.service");
  EXPECT_FALSE(alive(first));

  // Fixed: a restart (during the backoff) starts it at once.
  sup->install(makeUnit("demo.service", kSleeper));
  const int64_t t0 = builtin::monotonicUs();
  sup->restart("demo.service");
  EXPECT_LT(builtin::monotonicUs() - t0, 5'000'000);
  auto s = observe("demo.service");
  EXPECT_TRUE(s.active);
  EXPECT_TRUE(alive(s.pid));
  sup->stop("demo.service");
  EXPECT_LT(builtin::monotonicUs() - t0, 5'000'000);
  EXPECT_FALSE(alive(s.pid));
}

// A supervisor told to stop a service that ignores SIGTERM, with
// TimeoutStopSec=infinity, waits for ever — until it gets SIGTERM itself: then
// it kills the service and exits.
TEST_F(ReapTest, SigtermEndsASupervisorStuckWaitingForAStop) {
  pid_t pid = startUnit("demo.service", {{"ExecStart",
                                          "/bin/sh -c \"trap '' TERM; "
                                          "while :; do sleep 0.05; done\""},
                                         {"TimeoutStopSec", "infinity"}});
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(alive(pid));
  // Never left running, whatever the supervisor does.
  Finally kill([&] { ::kill(-pid, SIGKILL); });
  const pid_t supervisor = status("demo.service").supervisorPid;
  ASSERT_GT(supervisor, 0);

  // "stop", without waiting for the answer (there is none until it is gone).
  Fd conn = builtin::connectUnix(paths("demo.service").socket);
  ASSERT_TRUE(conn);
  ASSERT_TRUE(builtin::writeAll(conn.get(), "stop\n"));
  ASSERT_TRUE(awaitStatus("demo.service",
                          [](const builtin::Status& st) { return st.state == "stopping"; }));
  ASSERT_FALSE(awaitGone(pid, 300)) << "the service was meant to ignore SIGTERM";

  ASSERT_EQ(::kill(supervisor, SIGTERM), 0);
  EXPECT_TRUE(awaitGone(pid, 5000)) << log("demo.service");
  EXPECT_TRUE(awaitGone(supervisor, 5000)) << log("demo.service");
  // The stop it was asked for is answered.
  auto answer = builtin::readLine(conn.get(), 5000);
  EXPECT_EQ(answer.value_or("(none)"), "ok 0 stopped\n");
  EXPECT_FALSE(observe("demo.service").active);
}

// SIGTERM to a supervisor whose service runs stops the service and ends the
// supervisor; the state is recorded.
TEST_F(ReapTest, SigtermStopsTheServiceAndEndsTheSupervisor) {
  pid_t pid = startUnit("demo.service", kSleeper);
  const pid_t supervisor = status("demo.service").supervisorPid;
  ASSERT_EQ(::kill(supervisor, SIGTERM), 0);
  EXPECT_TRUE(awaitGone(pid, 5000));
  EXPECT_TRUE(awaitGone(supervisor, 5000));
  EXPECT_EQ(status("demo.service").state, "inactive");
  EXPECT_FALSE(observe("demo.service").active);
}

}  // namespace
}  // namespace mesh::supervise::test
