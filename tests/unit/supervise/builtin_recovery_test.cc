// What the builtin backend does when the world around a supervisor breaks: its
// status file cannot be written (a full disk), the supervisor was killed, the
// state directory was deleted, or the supervisor is one an older mesh-host
// started (its records in the state directory). Never a second copy of a
// service, never a success that was not recorded.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "builtin_fixture.hh"
#include "supervise/builtin/spawn_supervisor.hh"

namespace mesh::supervise::test {
namespace {

namespace fs = std::filesystem;

const KeyValues kSleeper = {{"ExecStart", "/bin/sleep 1000"}, {"TimeoutStopSec", "2"}};

// The mesh-host-supervise processes working on anything under `dir`.
std::vector<pid_t> supervisorsUnder(const std::string& dir) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline;
    try {
      cmdline = readFile("/proc/" + name + "/cmdline").value_or("");
    } catch (const std::exception&) {
      continue;  // it exited while we read
    }
    if (cmdline.find("mesh-host-supervise") != std::string::npos &&
        cmdline.find(dir) != std::string::npos && alive(std::stoi(name)))
      out.push_back(std::stoi(name));
  }
  return out;
}

class RecoveryTest : public BeatingServiceTest {
 protected:
  void TearDown() override {
    // Stop everything while the runtime directory is still there, then unmount.
    BuiltinTest::TearDown();
    for (pid_t pid : supervisorsUnder(dir)) ::kill(pid, SIGKILL);
    if (mounted) ::umount2(runtimeDir.c_str(), MNT_DETACH);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  // The runtime directory on a tmpfs of `bytes`; false when it cannot be had
  // (not root).
  bool runtimeDirOnTmpfs(const std::string& bytes) {
    fs::create_directories(runtimeDir);
    mounted = ::mount("tmpfs", runtimeDir.c_str(), "tmpfs", 0, ("size=" + bytes).c_str()) == 0;
    return mounted;
  }

  // Fills the file system holding `path` until it has no room left.
  static void fill(const std::string& path) {
    Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    ASSERT_TRUE(fd);
    std::string block(4096, 'x');
    while (::write(fd.get(), block.data(), block.size()) > 0) {
    }
    ASSERT_EQ(errno, ENOSPC);
  }

  bool mounted = false;
};

// A restart made on a full disk: the service restarted, but the supervisor
// could not record it. It says so (the answer names the file and errno),
// observe() still sees the truth (asked from the supervisor's memory), and the
// write is retried until the disk has room again.
TEST_F(RecoveryTest, AStatusThatCannotBeRecordedFailsTheAnswerButIsNotLost) {
  if (!runtimeDirOnTmpfs("64k")) GTEST_SKIP() << "mounting a tmpfs needs root";
  pid_t first = startUnit("demo.service", kSleeper);
  ASSERT_TRUE(alive(first));
  fill(runtimeDir + "/filler");

  const int64_t beforeUs = builtin::realtimeUs();
  std::string failure;
  try {
    sup->restart("demo.service");
  } catch (const std::exception& e) {
    failure = e.what();
  }
  const std::string path = paths("demo.service").status;
  EXPECT_NE(failure.find("restart of demo.service failed: started pid "), std::string::npos)
      << failure;
  EXPECT_NE(failure.find("but cannot record the status in " + path +
                         ": No space left on device (errno 28)"),
            std::string::npos)
      << failure;
  EXPECT_FALSE(alive(first));
  EXPECT_EQ(status("demo.service").pid, first);  // the file is behind…
  auto lock = builtin::supervisorLockState(paths("demo.service").lock);
  EXPECT_TRUE(lock.held);
  EXPECT_TRUE(lock.stale);
  auto s = observe("demo.service");  // …observe() is not
  EXPECT_TRUE(s.active);
  EXPECT_NE(s.pid, first);
  EXPECT_TRUE(alive(s.pid));
  EXPECT_GE(s.sinceUs, beforeUs);
  const pid_t second = s.pid;
  EXPECT_NE(log("demo.service").find("cannot record the status in " + path), std::string::npos);

  // Room again: the supervisor writes it on its next try.
  fs::remove(runtimeDir + "/filler");
  EXPECT_TRUE(awaitStatus(
      "demo.service", [&](const builtin::Status& st) { return st.pid == second; }, 5000));
  EXPECT_FALSE(builtin::supervisorLockState(paths("demo.service").lock).stale);
  EXPECT_EQ(observe("demo.service").pid, second);
  sup->restart("demo.service");  // answered "ok" again
  EXPECT_NE(observe("demo.service").pid, second);
}

// The end of an applying cycle (flush) gives an orphan a new supervisor: the
// same process, supervised again, and observe says what happened.
TEST_F(RecoveryTest, FlushAdoptsAnOrphanObserveFound) {
  pid_t pid = startBeating();
  ASSERT_GT(pid, 0);
  const int64_t since = observe("demo.service").sinceUs;
  killSupervisor();
  // observe() alone (plan, status) changes nothing.
  EXPECT_EQ(observe("demo.service").activeState, "active (unsupervised)");
  EXPECT_EQ(observe("demo.service").activeState, "active (unsupervised)");
  EXPECT_FALSE(builtin::supervisorHoldsLock(paths("demo.service").lock));
  EXPECT_TRUE(supervisorsUnder(dir).empty());

  sup->flush();
  EXPECT_TRUE(builtin::supervisorHoldsLock(paths("demo.service").lock));
  auto s = observe("demo.service");
  EXPECT_TRUE(s.active);
  EXPECT_EQ(s.pid, pid);
  EXPECT_EQ(s.sinceUs, since);
  EXPECT_EQ(s.activeState, fmt::format("active (supervisor was gone; adopted pid {})", pid));
  EXPECT_EQ(s.note, fmt::format("supervisor was gone; adopted pid {}", pid));
  EXPECT_EQ(supervisorsUnder(dir).size(), 1u);
  // Its output is read again.
  int now = beats();
  EXPECT_TRUE(awaitLog("demo.service", "tick " + std::to_string(now + 2) + "\n"));

  // Restart= is enforced again: a crash is restarted, and the note is gone.
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_TRUE(awaitStatus("demo.service", [&](const builtin::Status& st) {
    return st.state == "active" && st.pid != pid && st.pid > 0;
  }));
  s = observe("demo.service");
  EXPECT_EQ(s.activeState, "active");
  EXPECT_EQ(s.crashRestarts, 1);
  // A flush with nothing to adopt does nothing.
  const pid_t supervisor = status("demo.service").supervisorPid;
  sup->flush();
  EXPECT_EQ(supervisorsUnder(dir), std::vector<pid_t>{supervisor});
}

// The state directory deleted under a running service: its supervisor is found
// in the runtime directory, and start/restart go to it — never a second copy.
TEST_F(RecoveryTest, ALostStateDirectoryNeverStartsASecondCopy) {
  const Unit unit = makeUnit("demo.service", kSleeper);
  pid_t pid = startUnit("demo.service", kSleeper);
  const pid_t supervisor = status("demo.service").supervisorPid;
  fs::remove_all(stateDir);

  auto s = observe("demo.service");
  EXPECT_FALSE(s.installed);
  EXPECT_TRUE(s.active);
  EXPECT_EQ(s.pid, pid);
  EXPECT_EQ(s.activeState, "active");

  sup->install(unit);
  sup->start("demo.service");
  EXPECT_EQ(observe("demo.service").pid, pid);
  EXPECT_EQ(supervisorsUnder(dir), std::vector<pid_t>{supervisor});
  sup->restart("demo.service");
  s = observe("demo.service");
  EXPECT_NE(s.pid, pid);
  EXPECT_FALSE(alive(pid));
  EXPECT_EQ(supervisorsUnder(dir), std::vector<pid_t>{supervisor});
  // The status is where it always was, through a link to the runtime directory.
  EXPECT_EQ(
      builtin::readStatus(paths("demo.service").dir + "/status").value_or(builtin::Status{}).pid,
      s.pid);
}

// Both lost: the supervisor killed and the state directory deleted. The orphan
// is still found (its record is in the runtime directory) and adopted.
TEST_F(RecoveryTest, ALostStateDirectoryAndAKilledSupervisorStillAdopt) {
  const Unit unit = makeUnit("demo.service", kSleeper);
  pid_t pid = startUnit("demo.service", kSleeper);
  killSupervisor();
  fs::remove_all(stateDir);
  auto s = observe("demo.service");
  EXPECT_FALSE(s.installed);
  EXPECT_EQ(s.activeState, "active (unsupervised)");
  EXPECT_EQ(s.pid, pid);
  sup->install(unit);
  sup->start("demo.service");
  s = observe("demo.service");
  EXPECT_EQ(s.pid, pid);
  EXPECT_EQ(s.activeState, fmt::format("active (supervisor was gone; adopted pid {})", pid));
  EXPECT_EQ(supervisorsUnder(dir).size(), 1u);
}

// A supervisor an older mesh-host started keeps everything in the state
// directory. It is found and asked there; once it is gone, its orphan is
// adopted by a new supervisor (records in the runtime directory), output and all.
TEST_F(RecoveryTest, ASupervisorOfAnOlderMeshHostIsFoundAndItsOrphanAdopted) {
  beat = dir + "/beat";
  sup->install(makeUnit(
      "demo.service",
      {{"ExecStart", "/bin/sh -c 'n=0; while :; do n=$$((n+1)); echo tick $$n; echo $$n > " + beat +
                         ".tmp; mv " + beat + ".tmp " + beat + "; sleep 0.02; done'"}}));
  const auto legacy = paths("demo.service").legacy();
  ::unlink(legacy.status.c_str());  // an older mesh-host made no link there
  auto r = builtin::spawnSupervisor(MESH_SUPERVISE_EXE, legacy, false, 10'000);
  ASSERT_EQ(r.kind, builtin::Reply::Kind::Ok) << r.detail;
  const pid_t pid = r.pid;
  const pid_t old = builtin::readStatus(legacy.status).value().supervisorPid;
  ASSERT_GT(old, 0);
  ASSERT_TRUE(builtin::supervisorHoldsLock(legacy.lock));

  auto s = observe("demo.service");
  EXPECT_EQ(s.activeState, "active");
  EXPECT_EQ(s.pid, pid);
  sup->start("demo.service");  // asked, not started again
  EXPECT_EQ(observe("demo.service").pid, pid);
  EXPECT_EQ(supervisorsUnder(dir), std::vector<pid_t>{old});

  ASSERT_EQ(::kill(old, SIGKILL), 0);
  ASSERT_TRUE(awaitGone(old));
  EXPECT_EQ(observe("demo.service").activeState, "active (unsupervised)");
  sup->start("demo.service");
  s = observe("demo.service");
  EXPECT_EQ(s.pid, pid);
  EXPECT_EQ(s.activeState, fmt::format("active (supervisor was gone; adopted pid {})", pid));
  EXPECT_TRUE(builtin::supervisorHoldsLock(paths("demo.service").lock));
  EXPECT_EQ(status("demo.service").pid, pid);
  // Its records moved to the runtime directory; the state directory links there.
  EXPECT_FALSE(builtin::isRegularFile(legacy.status));
  EXPECT_EQ(builtin::readStatus(legacy.status).value_or(builtin::Status{}).pid, pid);
  // It reads the FIFO the orphan writes to.
  int now = beats();
  EXPECT_TRUE(awaitLog("demo.service", "tick " + std::to_string(now + 2) + "\n"))
      << log("demo.service");
  sup->stop("demo.service");
  EXPECT_TRUE(awaitGone(pid, 2000));
}

// The runtime directory's sockets, locks and status files are used by path, as
// root: an unprivileged user who owns a directory on the way could point it
// anywhere. Here eve (uid 65534) plants a link in her directory, on the way to
// the runtime directory, to a directory of root's: nothing is made there and the
// start fails, naming her directory.
TEST_F(RecoveryTest, ARuntimeDirectoryOnAnotherUsersPathIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a directory to another user needs root";
  const std::string eve = dir + "/eve", victim = dir + "/victim";
  ASSERT_EQ(::mkdir(eve.c_str(), 0755), 0);
  ASSERT_EQ(::chown(eve.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::mkdir(victim.c_str(), 0755), 0);
  ASSERT_EQ(::symlink(victim.c_str(), (eve + "/x").c_str()), 0);
  ASSERT_EQ(::lchown((eve + "/x").c_str(), 65534, 65534), 0);

  Options o = options();
  o.runtimeDir = eve + "/x/run";
  auto planted = openBuiltin(o);
  try {
    planted->install(makeUnit("demo.service", kSleeper));
    planted->start("demo.service");
    ADD_FAILURE() << "started with its runtime directory behind eve's link";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(eve + " belongs to uid 65534"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("MESH_HOST_RUNTIME_DIR"), std::string::npos);
  }
  EXPECT_TRUE(fs::is_empty(victim)) << "something was made behind the link";
  EXPECT_TRUE(supervisorsUnder(eve).empty());
}

TEST(RuntimeDirTest, IsDerivedFromTheStateDirectoryAndNeverInsideIt) {
  const char* saved = std::getenv("MESH_HOST_RUNTIME_DIR");
  ::unsetenv("MESH_HOST_RUNTIME_DIR");
  EXPECT_EQ(builtin::defaultRuntimeDir("/var/lib/mesh-host"), "/run/mesh-host");
  EXPECT_EQ(builtin::defaultRuntimeDir("/var/lib/mesh-host/"), "/run/mesh-host");
  EXPECT_EQ(builtin::defaultRuntimeDir("/tmp/t/root/var/lib/mesh-host"),
            "/tmp/t/root/run/mesh-host");
  const std::string other = builtin::defaultRuntimeDir("/srv/state");
  EXPECT_EQ(other, builtin::defaultRuntimeDir("/srv//state/"));
  EXPECT_NE(other, builtin::defaultRuntimeDir("/srv/state2"));
  EXPECT_EQ(other.find("/srv/state"), std::string::npos) << other;
  if (::geteuid() == 0) {
    EXPECT_EQ(other.rfind("/run/mesh-host/", 0), 0u) << other;
  }
  ::setenv("MESH_HOST_RUNTIME_DIR", "/somewhere/else", 1);
  EXPECT_EQ(builtin::defaultRuntimeDir("/srv/state"), "/somewhere/else");
  if (saved)
    ::setenv("MESH_HOST_RUNTIME_DIR", saved, 1);
  else
    ::unsetenv("MESH_HOST_RUNTIME_DIR");
}

// The lock files and who may hold them: our supervisor.lock is 0600; beside it, an
// older supervisor's `lock` counts only when write-locked — a read lock there (all
// anyone else can take on a 0644 file) is no supervisor.
TEST(SupervisorLock, OnlyAWriteLockOnTheOlderLockFileIsASupervisor) {
  char tmpl[] = "/tmp/mesh-supervisor-lock-XXXXXX";
  ASSERT_TRUE(::mkdtemp(tmpl));
  const std::string dir = tmpl;
  const std::string ours = dir + "/supervisor.lock", old = dir + "/lock";
  EXPECT_EQ(builtin::oldSupervisorLock(ours), old);
  EXPECT_FALSE(builtin::supervisorLockState(ours).held);  // neither file exists
  Fd oldFd(::open(old.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  ASSERT_TRUE(oldFd);
  const auto lockByte = [](int fd, short type, off_t start, off_t len) {
    struct flock fl {};
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = start;
    fl.l_len = len;
    return ::fcntl(fd, F_OFD_SETLK, &fl) == 0;
  };
  ASSERT_TRUE(lockByte(oldFd.get(), F_RDLCK, 0, 0));  // a reader's, on every byte
  EXPECT_FALSE(builtin::supervisorLockState(ours).held) << "a read lock taken for a supervisor";
  ASSERT_TRUE(lockByte(oldFd.get(), F_UNLCK, 0, 0));
  ASSERT_TRUE(lockByte(oldFd.get(), F_WRLCK, 0, 2));  // an older supervisor, status behind
  auto s = builtin::supervisorLockState(ours);
  EXPECT_TRUE(s.held);
  EXPECT_TRUE(s.stale);
  ASSERT_TRUE(lockByte(oldFd.get(), F_WRLCK, 0, 0));  // the oldest: the whole file
  EXPECT_TRUE(builtin::supervisorLockState(ours).held);
  EXPECT_FALSE(builtin::supervisorLockState(ours).stale);
  oldFd = Fd();
  // Ours: any lock counts, since nobody else can open it.
  Fd oursFd(::open(ours.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  ASSERT_TRUE(lockByte(oursFd.get(), F_WRLCK, 0, 1));
  EXPECT_TRUE(builtin::supervisorLockState(ours).held);
  EXPECT_FALSE(builtin::supervisorLockState(ours).stale);
  oursFd = Fd();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mesh::supervise::test
