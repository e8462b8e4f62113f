// The builtin backend with real processes: install, start, observe, restart, stop.
#include <sys/wait.h>

#include <algorithm>

#include "builtin_fixture.hh"
#include "util/digest.hh"
#include "util/error.hh"

namespace mesh::supervise::test {
namespace {

const KeyValues kSleeper = {{"ExecStart", "/bin/sh -c 'echo hello-from-service; exec sleep 1000'"}};

TEST_F(BuiltinTest, UnknownServiceIsNotInstalled) {
  auto s = observe("nothing.service");
  EXPECT_FALSE(s.installed);
  EXPECT_FALSE(s.active);
  EXPECT_EQ(s.installedText, "");
  EXPECT_EQ(s.pid, 0);
}

TEST_F(BuiltinTest, InstallWritesTheUnitAndStartsNothing) {
  Unit u = makeUnit("demo.service", kSleeper);
  sup->install(u);
  auto s = observe("demo.service");
  EXPECT_TRUE(s.installed);
  EXPECT_EQ(s.installedText, u.text);
  EXPECT_FALSE(s.active);
  EXPECT_EQ(s.activeState, "inactive");
  EXPECT_EQ(readFile(paths("demo.service").unit).value(), u.text);
}

TEST_F(BuiltinTest, StartRunsTheServiceAndLogsItsOutput) {
  pid_t pid = startUnit("demo.service", kSleeper);
  auto s = observe("demo.service");
  EXPECT_TRUE(s.active);
  EXPECT_EQ(s.activeState, "active");
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(alive(pid));
  EXPECT_GT(s.sinceUs, builtin::realtimeUs() - 60'000'000);
  EXPECT_LE(s.sinceUs, builtin::realtimeUs());
  EXPECT_EQ(s.crashRestarts, 0);
  EXPECT_TRUE(awaitLog("demo.service", "hello-from-service\n")) << log("demo.service");
  // It inherits stdin, stdout and stderr, and no other descriptor of ours.
  std::vector<std::string> fds;
  for (auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd"))
    fds.push_back(e.path().filename());
  std::sort(fds.begin(), fds.end());
  EXPECT_EQ(fds, (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(status("demo.service").unitDigest,
            Digest::ofBytes(makeUnit("demo.service", kSleeper).text).str());
}

TEST_F(BuiltinTest, StartOfARunningServiceTouchesNothing) {
  pid_t pid = startUnit("demo.service", kSleeper);
  auto before = observe("demo.service");
  pid_t supervisor = status("demo.service").supervisorPid;
  sup->start("demo.service");
  auto after = observe("demo.service");
  EXPECT_EQ(after.pid, pid);
  EXPECT_EQ(after.sinceUs, before.sinceUs);
  EXPECT_EQ(status("demo.service").supervisorPid, supervisor);
}

TEST_F(BuiltinTest, RestartReplacesTheProcess) {
  pid_t old = startUnit("demo.service", kSleeper);
  auto before = observe("demo.service");
  pid_t supervisor = status("demo.service").supervisorPid;
  sup->restart("demo.service");
  auto after = observe("demo.service");
  EXPECT_TRUE(after.active);
  EXPECT_NE(after.pid, old);
  EXPECT_GT(after.sinceUs, before.sinceUs);
  EXPECT_TRUE(awaitGone(old, 1000));
  EXPECT_TRUE(alive(after.pid));
  EXPECT_EQ(status("demo.service").supervisorPid, supervisor);  // same supervisor, new child
}

TEST_F(BuiltinTest, RestartPicksUpANewUnit) {
  startUnit("demo.service", kSleeper);
  sup->install(
      makeUnit("demo.service", {{"ExecStart", "/bin/sh -c 'echo second-unit; exec sleep 1000'"}}));
  sup->restart("demo.service");
  EXPECT_TRUE(awaitLog("demo.service", "second-unit"));
}

TEST_F(BuiltinTest, RestartOfAStoppedServiceStartsIt) {
  sup->install(makeUnit("demo.service", kSleeper));
  sup->restart("demo.service");
  auto s = observe("demo.service");
  EXPECT_TRUE(s.active);
  EXPECT_TRUE(alive(s.pid));
}

TEST_F(BuiltinTest, StopEndsTheWholeProcessGroup) {
  // The shell exits on TERM; its child ignores TERM and must still go.
  std::string pidFile = dir + "/grandchild.pid";
  pid_t pid =
      startUnit("demo.service",
                {{"ExecStart",
                  "/bin/sh -c \"trap 'exit 0' TERM; (trap '' TERM; exec sleep 1000) & echo $$! > " +
                      pidFile + "; wait\""}});
  ASSERT_TRUE(awaitInDir(
      dir, [&] { return readFile(pidFile).value_or("").find('\n') != std::string::npos; }));
  pid_t grandchild = std::stoi(readFile(pidFile).value());
  extraPids.push_back(grandchild);
  ASSERT_TRUE(alive(grandchild));
  pid_t supervisor = status("demo.service").supervisorPid;

  sup->stop("demo.service");
  EXPECT_TRUE(awaitGone(pid, 1000));
  EXPECT_TRUE(awaitGone(grandchild, 1000));
  EXPECT_TRUE(awaitGone(supervisor, 5000));
  auto s = observe("demo.service");
  EXPECT_TRUE(s.installed);
  EXPECT_FALSE(s.active);
  EXPECT_EQ(s.activeState, "inactive");
  EXPECT_EQ(s.pid, 0);
  EXPECT_FALSE(builtin::supervisorHoldsLock(paths("demo.service").lock));
  sup->stop("demo.service");  // stopping a stopped service is fine
}

TEST_F(BuiltinTest, StartAgainAfterStop) {
  pid_t first = startUnit("demo.service", kSleeper);
  sup->stop("demo.service");
  sup->start("demo.service");
  auto s = observe("demo.service");
  EXPECT_TRUE(s.active);
  EXPECT_NE(s.pid, first);
}

TEST_F(BuiltinTest, StartOfAMissingBinaryThrowsTheReason) {
  sup->install(makeUnit("bad.service", {{"ExecStart", "/nonexistent/bin/serve --port 1"}}));
  try {
    sup->start("bad.service");
    FAIL() << "start succeeded";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("start of bad.service failed: cannot execute /nonexistent/bin/serve"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("No such file or directory"), std::string::npos) << what;
  }
  auto s = observe("bad.service");
  EXPECT_FALSE(s.active);
  EXPECT_EQ(s.activeState, "failed");
}

TEST_F(BuiltinTest, StartOfACommandThatDiesAtOnceThrowsItsStatusAndLastLine) {
  sup->install(
      makeUnit("bad.service", {{"ExecStart", "/bin/sh -c 'echo config is broken; exit 3'"}}));
  try {
    sup->start("bad.service");
    FAIL() << "start succeeded";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "start of bad.service failed: exited with status 3: config is broken");
  }
  EXPECT_EQ(observe("bad.service").activeState, "failed");
  EXPECT_EQ(status("bad.service").lastExit, "exited with status 3");
}

TEST_F(BuiltinTest, StartOfAnUninstalledServiceThrows) {
  EXPECT_THROW(sup->start("ghost.service"), Error);
  EXPECT_THROW(sup->install(makeUnit("../escape", kSleeper)), Error);
}

TEST_F(BuiltinTest, UninstallStopsAndRemoves) {
  pid_t pid = startUnit("demo.service", kSleeper);
  sup->uninstall("demo.service");
  EXPECT_TRUE(awaitGone(pid, 1000));
  EXPECT_FALSE(observe("demo.service").installed);
  EXPECT_FALSE(lstatPath(paths("demo.service").dir));
}

TEST_F(BuiltinTest, SupervisorOutlivesTheProcessThatStartedIt) {
  sup->install(makeUnit("demo.service", kSleeper));
  pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    int code = 0;
    try {
      openBuiltin(options())->start("demo.service");
    } catch (...) {
      code = 1;
    }
    ::_exit(code);
  }
  int ws = 0;
  ASSERT_EQ(::waitpid(parent, &ws, 0), parent);
  ASSERT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);

  auto s = observe("demo.service");
  EXPECT_TRUE(s.active);
  EXPECT_TRUE(alive(s.pid));
  pid_t supervisor = status("demo.service").supervisorPid;
  EXPECT_TRUE(alive(supervisor));
  EXPECT_TRUE(builtin::supervisorHoldsLock(paths("demo.service").lock));
  // Detached: its own session, and not our child.
  EXPECT_NE(::getsid(supervisor), ::getsid(0));
  EXPECT_EQ(::waitpid(supervisor, nullptr, WNOHANG), -1);
}

}  // namespace
}  // namespace mesh::supervise::test
