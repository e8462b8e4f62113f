// Type=notify with real processes: start and restart return once the new
// process sent READY=1 (shell scripts calling systemd-notify, a child of the
// main process), and fail when it exits first or never says it is ready.
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>

#include "builtin_fixture.hh"
#include "util/error.hh"

namespace mesh::supervise::test {
namespace {

using namespace std::chrono_literals;

class NotifyTest : public BuiltinTest {
 protected:
  void SetUp() override {
    BuiltinTest::SetUp();
    ASSERT_TRUE(::access("/usr/bin/systemd-notify", X_OK) == 0 ||
                ::access("/bin/systemd-notify", X_OK) == 0)
        << "systemd-notify is missing: the systemd package (scripts/install-deps) provides it";
  }

  // An executable shell script in the test directory; its path.
  std::string script(const std::string& name, const std::string& body) {
    std::string path = dir + "/" + name;
    atomicWrite(path, "#!/bin/sh\n" + body, 0755);
    return path;
  }

  // Writes `d/started`, waits for `d/go`, writes `d/ready`, then says so.
  std::string waitForGo() {
    const std::string d = dir;
    return script("service.sh",
                  "echo \"notify socket: $NOTIFY_SOCKET\"\n"
                  "touch " +
                      d +
                      "/started\n"
                      "while [ ! -e " +
                      d +
                      "/go ]; do sleep 0.02; done\n"
                      "touch " +
                      d +
                      "/ready\n"
                      "systemd-notify --ready --status=serving\n"
                      "exec sleep 1000\n");
  }

  static int64_t mtimeUs(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return -1;
    return int64_t{st.st_mtim.tv_sec} * 1'000'000 + st.st_mtim.tv_nsec / 1000;
  }

  // Runs `call` on another thread; the future gives the realtime µs it returned at.
  template <typename F>
  static std::future<int64_t> inBackground(F call) {
    return std::async(std::launch::async, [call] {
      call();
      return builtin::realtimeUs();
    });
  }

  static std::string failureOf(std::future<int64_t>& f) {
    try {
      f.get();
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(it succeeded)";
  }
};

TEST_F(NotifyTest, StartReturnsOnlyOnceTheServiceSentReady) {
  sup->install(makeUnit("demo.service", {{"Type", "notify"}, {"ExecStart", waitForGo()}}));
  auto start = inBackground([&] { sup->start("demo.service"); });
  ASSERT_TRUE(awaitFile(dir + "/started"));
  ASSERT_TRUE(awaitStatus("demo.service", [](const auto& s) { return s.pid > 0; }));

  // Running but not ready: activating, as systemd reports it; no since yet.
  auto s = observe("demo.service");
  EXPECT_TRUE(s.active);
  EXPECT_EQ(s.activeState, "activating");
  EXPECT_EQ(s.sinceUs, 0);
  EXPECT_TRUE(alive(s.pid));
  EXPECT_EQ(start.wait_for(300ms), std::future_status::timeout) << "start returned before READY=1";

  atomicWrite(dir + "/go", "", 0644);
  const int64_t returnedUs = start.get();
  const int64_t readyUs = mtimeUs(dir + "/ready");
  ASSERT_GT(readyUs, 0) << "start returned before the service wrote its ready file";
  EXPECT_GE(returnedUs, readyUs);
  s = observe("demo.service");
  EXPECT_TRUE(s.active);
  EXPECT_EQ(s.activeState, "active");
  EXPECT_GE(s.sinceUs, readyUs);  // when it became ready, not when it started
  EXPECT_LE(s.sinceUs, returnedUs);
  EXPECT_EQ(status("demo.service").statusText, "serving");
  EXPECT_TRUE(
      awaitLog("demo.service", "notify socket: " + paths("demo.service").runDir + "/notify.sock\n"))
      << log("demo.service");
}

// Issue 27: a STATUS= that is not UTF-8 (and holds an ESC) made the root supervisor give
// up (its status file could not be written); now it is kept, replaced as JSON replaces
// it, and the supervisor goes on answering.
TEST_F(NotifyTest, AStatusThatIsNotUtf8NeverEndsTheSupervisor) {
  const std::string d = dir;
  sup->install(makeUnit(
      "demo.service",
      {{"Type", "notify"},
       {"ExecStart", script("service.sh",
                            "systemd-notify --ready --status=\"$(printf 'bad \\377 \\033[2J')\"\n"
                            "touch " +
                                d +
                                "/sent\n"
                                "exec sleep 1000\n")}}));
  sup->start("demo.service");
  ASSERT_TRUE(awaitFile(dir + "/sent"));
  ASSERT_TRUE(awaitStatus("demo.service", [](const auto& s) { return !s.statusText.empty(); }));
  EXPECT_EQ(status("demo.service").statusText, "bad \xef\xbf\xbd \x1b[2J");
  const pid_t supervisor = status("demo.service").supervisorPid;
  ASSERT_GT(supervisor, 0);
  EXPECT_TRUE(alive(supervisor));
  EXPECT_TRUE(observe("demo.service").active);
  sup->restart("demo.service");  // it still answers
  EXPECT_EQ(status("demo.service").supervisorPid, supervisor);
  EXPECT_TRUE(observe("demo.service").active);
}

TEST_F(NotifyTest, RestartWaitsForTheNewProcessToBeReady) {
  const std::string d = dir;
  std::string exec = script("service.sh", "n=$(( $(cat " + d +
                                              "/count 2>/dev/null || echo 0) + 1 ))\n"
                                              "echo $n > " +
                                              d +
                                              "/count\n"
                                              "touch " +
                                              d +
                                              "/started-$n\n"
                                              "while [ ! -e " +
                                              d +
                                              "/go-$n ]; do sleep 0.02; done\n"
                                              "touch " +
                                              d +
                                              "/ready-$n\n"
                                              "systemd-notify --ready\n"
                                              "exec sleep 1000\n");
  atomicWrite(dir + "/go-1", "", 0644);
  pid_t first = startUnit("demo.service", {{"Type", "notify"}, {"ExecStart", exec}});
  const int64_t firstSince = observe("demo.service").sinceUs;
  ASSERT_GE(firstSince, mtimeUs(dir + "/ready-1"));

  auto restart = inBackground([&] { sup->restart("demo.service"); });
  ASSERT_TRUE(awaitFile(dir + "/started-2"));
  EXPECT_TRUE(awaitGone(first, 1000));
  ASSERT_TRUE(awaitStatus("demo.service", [&](const auto& s) { return s.pid != first; }));
  auto s = observe("demo.service");
  EXPECT_EQ(s.activeState, "activating");
  EXPECT_EQ(restart.wait_for(300ms), std::future_status::timeout)
      << "restart returned before the new process sent READY=1";

  atomicWrite(dir + "/go-2", "", 0644);
  const int64_t returnedUs = restart.get();
  const int64_t readyUs = mtimeUs(dir + "/ready-2");
  ASSERT_GT(readyUs, 0);
  EXPECT_GE(returnedUs, readyUs);
  s = observe("demo.service");
  EXPECT_EQ(s.activeState, "active");
  EXPECT_NE(s.pid, first);
  EXPECT_TRUE(alive(s.pid));
  EXPECT_GE(s.sinceUs, readyUs);
  EXPECT_GT(s.sinceUs, firstSince);
}

TEST_F(NotifyTest, ExitBeforeReadyFailsTheStartWithItsStatus) {
  sup->install(makeUnit(
      "demo.service",
      {{"Type", "notify"}, {"ExecStart", script("broken.sh", "echo config is broken\nexit 3\n")}}));
  try {
    sup->start("demo.service");
    FAIL() << "start succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "start of demo.service failed: exited with status 3 before READY=1: config is broken");
  }
  auto s = observe("demo.service");
  EXPECT_FALSE(s.active);
  EXPECT_EQ(s.activeState, "failed");

  // A clean exit before READY=1 fails the start as well (systemd: Result=protocol).
  sup->install(makeUnit("clean.service",
                        {{"Type", "notify"}, {"ExecStart", script("clean.sh", "exit 0\n")}}));
  try {
    sup->start("clean.service");
    FAIL() << "start succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "start of clean.service failed: exited with status 0 before READY=1");
  }
  EXPECT_EQ(observe("clean.service").activeState, "failed");
}

TEST_F(NotifyTest, NoReadyWithinTimeoutStartSecKillsItAndFailsTheStart) {
  sup->install(makeUnit(
      "demo.service",
      {{"Type", "notify"},
       {"TimeoutStartSec", "1"},
       {"ExecStart", script("silent.sh", "echo $$ > " + dir + "/pid\nexec sleep 1000\n")}}));
  const int64_t t0 = builtin::monotonicUs();
  try {
    sup->start("demo.service");
    FAIL() << "start succeeded";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("start of demo.service failed: timeout waiting for READY=1"),
        std::string::npos)
        << e.what();
  }
  const int64_t took = builtin::monotonicUs() - t0;
  EXPECT_GE(took, 1'000'000);
  EXPECT_LT(took, 10'000'000);
  const pid_t pid = std::atoi(readFile(dir + "/pid").value_or("0").c_str());
  ASSERT_GT(pid, 0);
  EXPECT_FALSE(alive(pid));  // gone before start() returned: no waiting here
  auto s = observe("demo.service");
  EXPECT_FALSE(s.active);
  EXPECT_EQ(s.activeState, "failed");
  EXPECT_EQ(status("demo.service").lastExit,
            "timeout waiting for READY=1, then killed by signal 15 (TERM)");
  EXPECT_NE(log("demo.service").find("did not send READY=1 within 1s: stopping it"),
            std::string::npos)
      << log("demo.service");
}

// systemd-notify returns only once its message was read (BARRIER=1), so `sent`
// existing means the supervisor has seen — and refused — READY=1.
TEST_F(NotifyTest, NotifyAccessNoneIgnoresReadyUntilStopped) {
  sup->install(makeUnit("demo.service",
                        {{"Type", "notify"},
                         {"NotifyAccess", "none"},
                         {"TimeoutStartSec", "infinity"},
                         {"ExecStart", script("service.sh", "systemd-notify --ready\ntouch " + dir +
                                                                "/sent\nexec sleep 1000\n")}}));
  auto start = inBackground([&] { sup->start("demo.service"); });
  ASSERT_TRUE(awaitFile(dir + "/sent"));
  EXPECT_NE(log("demo.service").find("ignored a notification from pid"), std::string::npos)
      << log("demo.service");
  EXPECT_EQ(observe("demo.service").activeState, "activating");
  EXPECT_EQ(start.wait_for(0ms), std::future_status::timeout);
  pid_t pid = observe("demo.service").pid;
  sup->stop("demo.service");  // a stop while it is starting fails the start
  EXPECT_NE(failureOf(start).find("start of demo.service failed: stopped"), std::string::npos);
  EXPECT_FALSE(alive(pid));
  EXPECT_EQ(observe("demo.service").activeState, "inactive");
}

// Another user cannot reach the runtime directory: a socket in the directory
// only root may write (no user can take its name first, as one can an abstract
// one), given to that user, and the message comes from systemd-notify itself (not
// allowed to speak for its parent), a child of the main process.
TEST_F(NotifyTest, AServiceOfAnotherUserNotifiesOverASocketOnlyRootCouldMake) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to run a service as nobody";
  if (!::getpwnam("nobody")) GTEST_SKIP() << "no user nobody here";
  startUnit("demo.service", {{"Type", "notify"},
                             {"User", "nobody"},
                             {"ExecStart", script("service.sh",
                                                  "echo \"notify socket: $NOTIFY_SOCKET\"\n"
                                                  "systemd-notify --ready\nexec sleep 1000\n")}});
  auto s = observe("demo.service");
  EXPECT_EQ(s.activeState, "active");
  EXPECT_GT(s.sinceUs, 0);
  EXPECT_TRUE(awaitLog("demo.service", "notify socket: /run/mesh-host-notify/"))
      << log("demo.service");
  EXPECT_FALSE(lstatPath(paths("demo.service").runDir + "/notify.sock"));
  auto dir = lstatPath("/run/mesh-host-notify");
  ASSERT_TRUE(dir);
  EXPECT_EQ(dir->st_mode & 07777, 0711u);
  EXPECT_EQ(dir->st_uid, 0u);
}

TEST_F(NotifyTest, ARuntimeDirTooDeepForSunPathUsesAShortSocketPath) {
  Options o;
  o.stateDir = dir + "/" + std::string(100, 'd') + "/state";
  o.runtimeDir = dir + "/" + std::string(100, 'd') + "/run";
  o.supervisorExe = MESH_SUPERVISE_EXE;
  auto deep = openBuiltin(o);
  deep->install(makeUnit("demo.service", {{"Type", "notify"}, {"ExecStart", waitForGo()}}));
  Finally stop([&] {
    try {
      deep->stop("demo.service");
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  });
  atomicWrite(dir + "/go", "", 0644);
  deep->start("demo.service");
  auto s = deep->observe({"demo.service"}, true).at("demo.service");
  EXPECT_EQ(s.activeState, "active");
  EXPECT_TRUE(alive(s.pid));
  const std::string deepLog = o.stateDir + "/log/demo.service.log";
  EXPECT_TRUE(awaitInDir(parentOf(deepLog), [&] {
    return readFile(deepLog).value_or("").find(
               ::geteuid() == 0 ? "notify socket: /run/mesh-host-notify/"
                                : "notify socket: @mesh-host-supervise/") != std::string::npos;
  })) << readFile(deepLog).value_or("");
}

TEST_F(NotifyTest, StartAdoptsAnOrphanThatIsStillStartingAndWaitsForItsReady) {
  sup->install(makeUnit("demo.service", {{"Type", "notify"}, {"ExecStart", waitForGo()}}));
  auto first = inBackground([&] { sup->start("demo.service"); });
  ASSERT_TRUE(awaitFile(dir + "/started"));
  ASSERT_TRUE(awaitStatus("demo.service",
                          [](const auto& s) { return s.pid > 0 && s.state == "starting"; }));
  const pid_t pid = status("demo.service").pid;
  const pid_t killed = status("demo.service").supervisorPid;
  ASSERT_EQ(::kill(killed, SIGKILL), 0);
  ASSERT_TRUE(awaitGone(killed));
  EXPECT_NE(failureOf(first), "(it succeeded)");  // its supervisor died under it
  EXPECT_EQ(observe("demo.service").activeState, "activating (unsupervised)");

  auto second = inBackground([&] { sup->start("demo.service"); });
  ASSERT_TRUE(awaitStatus("demo.service", [&](const auto& s) {
    return s.supervisorPid != killed && s.state == "starting";
  }));
  EXPECT_EQ(second.wait_for(300ms), std::future_status::timeout)
      << "start returned before the adopted process sent READY=1";
  atomicWrite(dir + "/go", "", 0644);
  const int64_t returnedUs = second.get();
  const int64_t readyUs = mtimeUs(dir + "/ready");
  EXPECT_GE(returnedUs, readyUs);
  auto s = observe("demo.service");
  EXPECT_EQ(s.activeState, fmt::format("active (supervisor was gone; adopted pid {})", pid));
  EXPECT_EQ(s.pid, pid);  // adopted, not restarted
  EXPECT_GE(s.sinceUs, readyUs);
  EXPECT_NE(log("demo.service").find("adopted pid " + std::to_string(pid)), std::string::npos);
}

TEST_F(NotifyTest, ASimpleServiceIsUnaffected) {
  const int64_t t0 = builtin::monotonicUs();
  pid_t pid = startUnit("demo.service", {{"Type", "simple"},
                                         {"ExecStart", script("simple.sh",
                                                              "echo \"notify=[$NOTIFY_SOCKET]\"\n"
                                                              "exec sleep 1000\n")}});
  EXPECT_LT(builtin::monotonicUs() - t0, 5'000'000);
  auto s = observe("demo.service");
  EXPECT_EQ(s.activeState, "active");
  EXPECT_TRUE(alive(pid));
  EXPECT_GT(s.sinceUs, 0);
  EXPECT_TRUE(awaitLog("demo.service", "notify=[]\n")) << log("demo.service");
  EXPECT_FALSE(lstatPath(paths("demo.service").runDir + "/notify.sock"));
}

}  // namespace
}  // namespace mesh::supervise::test
