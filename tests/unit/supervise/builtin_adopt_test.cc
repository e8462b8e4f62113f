// A supervisor killed with -9 leaves its service running; observe() reports it
// honestly and start() adopts it without restarting it.
#include "builtin_fixture.hh"

namespace mesh::supervise::test {
namespace {

using AdoptTest = BeatingServiceTest;

TEST_F(AdoptTest, AnOrphanedServiceIsReportedAliveAndUnsupervised) {
  pid_t pid = startBeating();
  killSupervisor();
  // It keeps running — and keeps writing output with nobody reading it.
  int now = beats();
  ASSERT_TRUE(awaitInDir(dir, [&] { return beats() >= now + 3; }));
  auto s = observe("demo.service");
  EXPECT_TRUE(s.active);
  EXPECT_EQ(s.activeState, "active (unsupervised)");
  EXPECT_EQ(s.pid, pid);
  EXPECT_TRUE(alive(pid));
}

TEST_F(AdoptTest, StartAdoptsTheOrphanWithoutRestartingIt) {
  pid_t pid = startBeating();
  auto before = observe("demo.service");
  killSupervisor();
  sup->start("demo.service");
  auto s = observe("demo.service");
  EXPECT_TRUE(s.active);
  // Said, for `status`, until it is next restarted.
  EXPECT_EQ(s.activeState, fmt::format("active (supervisor was gone; adopted pid {})", pid));
  EXPECT_EQ(s.note, fmt::format("supervisor was gone; adopted pid {}", pid));
  EXPECT_EQ(s.pid, pid);
  EXPECT_EQ(s.sinceUs, before.sinceUs);
  EXPECT_TRUE(builtin::supervisorHoldsLock(paths("demo.service").lock));
  // The new supervisor reads the output the orphan kept writing.
  int now = beats();
  ASSERT_TRUE(awaitInDir(dir, [&] { return beats() >= now + 2; }));
  EXPECT_TRUE(awaitLog("demo.service", "tick " + std::to_string(now + 1) + "\n"));
  EXPECT_NE(log("demo.service").find("adopted pid " + std::to_string(pid)), std::string::npos);

  // And supervises it from then on: a crash is restarted…
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_TRUE(awaitStatus("demo.service", [&](const builtin::Status& st) {
    return st.state == "active" && st.pid != pid && st.pid > 0;
  }));
  pid_t second = observe("demo.service").pid;
  // …and stop() stops it.
  sup->stop("demo.service");
  EXPECT_TRUE(awaitGone(second, 1000));
  EXPECT_FALSE(observe("demo.service").active);
}

TEST_F(AdoptTest, StopEndsAnOrphanToo) {
  pid_t pid = startBeating();
  killSupervisor();
  sup->stop("demo.service");
  EXPECT_TRUE(awaitGone(pid, 1000));
  auto s = observe("demo.service");
  EXPECT_FALSE(s.active);
  EXPECT_EQ(s.activeState, "inactive");
}

TEST_F(AdoptTest, RestartOfAnOrphanReplacesIt) {
  pid_t pid = startBeating();
  killSupervisor();
  sup->restart("demo.service");
  auto s = observe("demo.service");
  EXPECT_TRUE(s.active);
  EXPECT_NE(s.pid, pid);
  EXPECT_TRUE(awaitGone(pid, 1000));
}

TEST_F(AdoptTest, ADeadServiceWithADeadSupervisorIsStartedAfresh) {
  pid_t pid = startBeating();
  killSupervisor();
  ASSERT_EQ(::kill(-pid, SIGKILL), 0);
  ASSERT_TRUE(awaitGone(pid));
  auto s = observe("demo.service");
  EXPECT_FALSE(s.active);
  EXPECT_EQ(s.activeState, "failed");
  sup->start("demo.service");
  s = observe("demo.service");
  EXPECT_TRUE(s.active);
  EXPECT_NE(s.pid, pid);
}

}  // namespace
}  // namespace mesh::supervise::test
