// One run of a health check (agent/health_probe.hh) on real processes, and the health a
// service's run is judged to have over its checks (agent/service_look.hh).
#include "agent/health_probe.hh"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "agent/service_look.hh"

namespace mesh::agent {
namespace {

using namespace std::chrono_literals;

Probe sh(const std::string& script, std::chrono::milliseconds timeout = 2s) {
  return {{"/bin/sh", "-c", script}, std::nullopt, std::nullopt, timeout};
}

TEST(HealthProbe, ExitZeroPasses) {
  const auto r = runProbe(sh("echo fine"));
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.reason, "");
}

TEST(HealthProbe, AFailureSaysItsExitCodeAndFirstLineOnly) {
  const auto r = runProbe(sh("echo 'connection refused'; echo second line; exit 3"));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.reason, "exit 3: connection refused");
}

TEST(HealthProbe, OutputIsBoundedAndEscaped) {
  const auto r =
      runProbe(sh("printf '\\033[31mred'; head -c 100000 /dev/zero | tr '\\0' x; exit 1"));
  EXPECT_FALSE(r.passed);
  EXPECT_LE(r.reason.size(), kProbeReasonMax + 40) << r.reason;
  EXPECT_EQ(r.reason.find('\033'), std::string::npos) << r.reason;
  EXPECT_EQ(r.reason.rfind("exit 1: ", 0), 0u) << r.reason;
}

TEST(HealthProbe, ATimeoutKillsTheWholeProcessGroup) {
  char dir[] = "/tmp/mesh-probe-XXXXXX";
  ASSERT_TRUE(::mkdtemp(dir));
  const std::string pidFile = std::string(dir) + "/child";
  const auto start = std::chrono::steady_clock::now();
  // A child of the check that would outlive it, and the check itself hanging.
  const auto r = runProbe(sh("sleep 60 & echo $! > " + pidFile + "; sleep 60", 300ms));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.reason, "timed out after 300 ms");
  EXPECT_LT(took, 5s);
  pid_t child = 0;
  std::ifstream(pidFile) >> child;
  ASSERT_GT(child, 0);
  // Killed with its group: its death is awaited on a pidfd (SIGKILL is delivered
  // asynchronously); ESRCH means it is already gone.
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
  if (fd >= 0) {
    pollfd p{fd, POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 5000), 1) << "child " << child << " outlived the check's timeout";
    ::close(fd);
  } else {
    EXPECT_EQ(errno, ESRCH);
  }
  std::filesystem::remove_all(dir);
}

TEST(HealthProbe, AMissingProgramSaysSo) {
  const auto r = runProbe({{"/nonexistent/check"}, std::nullopt, std::nullopt, 2s});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.reason, "exit 127: /nonexistent/check: No such file or directory");
}

TEST(HealthProbe, AChildLeftHoldingTheOutputDoesNotHoldTheCheck) {
  const auto start = std::chrono::steady_clock::now();
  const auto r = runProbe(sh("sleep 30 & exit 0", 10s));
  EXPECT_TRUE(r.passed) << r.reason;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

// The health of a run over its checks.
supervise::ServiceState running(int64_t sinceUs) {
  supervise::ServiceState st;
  st.running = st.active = true;
  st.sinceUs = sinceUs;
  return st;
}

TEST(HealthTrack, StartingUntilTheFirstPassThenHealthyThenUnhealthy) {
  WatchedService w;
  w.id = "web.app";
  w.probe = sh("true");
  w.interval = 1s;
  HealthTrack t;
  const auto t0 = WatchClock::now();
  seeRun(t, w, running(1000), t0);
  EXPECT_EQ(t.health, "starting");
  checked(t, w, 1000, {false, "exit 1: not yet"}, t0 + 1s);
  EXPECT_EQ(t.health, "starting") << "a failure soon after the start is not unhealthy yet";
  EXPECT_EQ(t.reason, "exit 1: not yet");
  checked(t, w, 1000, {true, ""}, t0 + 2s);
  EXPECT_EQ(t.health, "healthy");
  EXPECT_EQ(t.reason, "");
  checked(t, w, 1000, {false, "exit 2: down"}, t0 + 3s);
  EXPECT_EQ(t.health, "unhealthy");
  EXPECT_EQ(t.reason, "exit 2: down");
  // A new run (a crash restart) starts again.
  seeRun(t, w, running(5000), t0 + 4s);
  EXPECT_EQ(t.health, "starting");
  // A result of the run before is dropped.
  checked(t, w, 1000, {true, ""}, t0 + 4s);
  EXPECT_EQ(t.health, "starting");
}

TEST(HealthTrack, ACheckThatNeverPassesIsUnhealthyAfterItsStartingIntervals) {
  WatchedService w;
  w.probe = sh("false");
  w.interval = 1s;
  HealthTrack t;
  const auto t0 = WatchClock::now();
  seeRun(t, w, running(1), t0);
  checked(t, w, 1, {false, "exit 1"}, t0 + 2s);
  EXPECT_EQ(t.health, "starting");
  checked(t, w, 1, {false, "exit 1"}, t0 + 1s * kStartingIntervals);
  EXPECT_EQ(t.health, "unhealthy");
}

TEST(HealthTrack, NotifyIsHealthyOnceReadyAndNoneDeclaredIsEmpty) {
  WatchedService notify;
  notify.notify = true;
  HealthTrack t;
  supervise::ServiceState activating;
  activating.active = true;
  activating.activeState = "activating";
  seeRun(t, notify, activating, WatchClock::now());
  EXPECT_EQ(t.health, "starting");
  seeRun(t, notify, running(7), WatchClock::now());
  EXPECT_EQ(t.health, "healthy");
  WatchedService plain;
  HealthTrack u;
  seeRun(u, plain, running(7), WatchClock::now());
  EXPECT_EQ(serviceStatus(plain, running(7), u).health, "");
}

TEST(HealthTrack, TheStatusCountsCrashesForEverAndTheRunsStart) {
  WatchedService w;
  w.id = "web.app";
  w.unit = "web.service";
  w.restarts = 2;
  w.crashRestartsBefore = 3;
  auto st = running(1'700'000'000'123'456);
  st.crashRestarts = 1;
  HealthTrack t;
  seeRun(t, w, st, WatchClock::now());
  const auto s = serviceStatus(w, st, t);
  EXPECT_EQ(s.upSinceMs, 1'700'000'000'123);
  EXPECT_EQ(s.restartsByMeshHost, 2);
  EXPECT_EQ(s.restartsByCrash, 4);
  EXPECT_TRUE(s.running);
}

}  // namespace
}  // namespace mesh::agent
