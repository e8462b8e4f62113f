// Giving a vendor's unit back (the `service` kind, on the namespace systemd):
// when the resource names another unit, the old one is put back as mesh-host
// found it and the new one taken over, in one cycle; when it is no longer
// declared, a unit that runs on is restarted without mesh-host's drop-in — and a
// real kill (strace's SIGKILL) at any point of that removal never loses that
// restart, nor makes it twice.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "service_fixture.hh"

namespace mesh::e2e {
namespace {

const std::string kKeys =
    "state = \"running\"\nenabled = true\ndropin = { Environment = \"GREETING=hello\" }";

class ServiceGiveBack : public ServiceKind {
 protected:
  // `mesh-host apply decl` killed by strace at the Nth call of `syscall`; true
  // when it ran through (the Nth call never came).
  bool applyKilledAt(const std::string& syscall, int n, const std::string& decl) {
    std::vector<std::string> argv = {
        "strace",      "-qq",   "-o",
        "/dev/null",   "-e",    fmt::format("inject={}:signal=KILL:when={}", syscall, n),
        MESH_HOST_BIN, "apply", decl,
        "--root",      root,    "--node",
        "test"};
    argv.insert(argv.end(), extraArgs.begin(), extraArgs.end());
    return runCommand(argv, extraEnv).code == 0;
  }
};

TEST_F(ServiceGiveBack, ARenamedUnitGivesTheOldOneBackAndTakesTheNewOneInOneCycle) {
  const std::string other = addVendorUnit();
  ASSERT_EQ(apply(declare(text("one", kKeys))).code, 0);
  ASSERT_EQ(active(), "active");
  ASSERT_EQ(enabled(), "enabled");
  ASSERT_TRUE(std::filesystem::exists(dropinPath()));
  ASSERT_EQ(active(other), "inactive");
  const std::string vendorBefore = slurp(vendorFile);

  // The same resource, another unit: one cycle gives the first back (found
  // stopped and disabled, its drop-in gone) and takes the other over.
  Result moved = apply(declare(text("one", kKeys, other)));
  ASSERT_EQ(moved.code, 0) << moved.out << moved.err;
  auto o = outcomeOf(moved.json(), "web.vendor");
  EXPECT_EQ(o["outcome"], "updated") << o;
  EXPECT_NE(o["reason"].get<std::string>().find("unit was " + unit), std::string::npos) << o;
  EXPECT_NE(o["detail"].get<std::string>().find(unit + " given back"), std::string::npos) << o;
  EXPECT_FALSE(std::filesystem::exists(dropinPath())) << "the old unit's drop-in was left behind";
  EXPECT_EQ(active(), "inactive");
  EXPECT_EQ(enabled(), "disabled");
  EXPECT_EQ(active(other), "active");
  EXPECT_EQ(enabled(other), "enabled");
  EXPECT_NE(slurp(dropinPath(other)).find("Environment=GREETING=hello"), std::string::npos);
  EXPECT_EQ(ctlOut({"show", "-p", "Environment", "--value", other}), "GREETING=hello");
  EXPECT_EQ(slurp(vendorFile), vendorBefore) << "the vendor's unit was written";

  // Settled: the next cycle does nothing to either.
  const std::string pid = mainPid(other);
  Result again = apply(declare(text("one", kKeys, other)));
  EXPECT_EQ(outcomeOf(again.json(), "web.vendor")["outcome"], "unchanged");
  EXPECT_EQ(mainPid(other), pid);
  EXPECT_EQ(active(), "inactive");

  // No longer declared: the new one is given back too, the old one left alone.
  ASSERT_EQ(apply(emptyDeclaration()).code, 0);
  EXPECT_EQ(active(other), "inactive");
  EXPECT_EQ(enabled(other), "disabled");
  EXPECT_FALSE(std::filesystem::exists(dropinPath(other)));
  EXPECT_EQ(active(), "inactive");
}

// Found running, the unit runs on once given back: it must run again without
// the drop-in's settings — systemd reloaded, the unit restarted.
TEST_F(ServiceGiveBack, NoLongerDeclaredAUnitThatRunsOnIsRestartedWithoutTheDropin) {
  ASSERT_EQ(SystemdNamespace::instance().ctl({"start", unit}).code, 0);
  ASSERT_EQ(apply(declare(text("one", kKeys))).code, 0);
  ASSERT_EQ(ctlOut({"show", "-p", "Environment", "--value", unit}), "GREETING=hello");
  const std::string pid = mainPid();
  Result gone = apply(emptyDeclaration());
  ASSERT_EQ(gone.code, 0) << gone.out << gone.err;
  auto o = outcomeOf(gone.json(), "web.vendor");
  EXPECT_EQ(o["outcome"], "removed") << o;
  EXPECT_NE(o["detail"].get<std::string>().find("restarted " + unit + " without it"),
            std::string::npos)
      << o;
  EXPECT_EQ(active(), "active");
  EXPECT_NE(mainPid(), pid) << "still the process that ran with the drop-in";
  EXPECT_EQ(ctlOut({"show", "-p", "Environment", "--value", unit}), "");
  EXPECT_EQ(ctlOut({"show", "-p", "NeedDaemonReload", "--value", unit}), "no");
}

// The kill points of the removal: every way it makes a change durable or takes
// a file away (the drop-in, its directory) and the store's commits.
const char* const kGiveBackKillPoints[] = {"fsync",    "fdatasync", "syncfs", "unlink",
                                           "unlinkat", "rmdir",     "rename"};

TEST_F(ServiceGiveBack, AKillAtAnyPointOfTheRemovalNeverLosesTheRestartWithoutTheDropin) {
  if (runCommand({"strace", "-V"}).code != 0) GTEST_SKIP() << "strace is not installed";
  ASSERT_EQ(SystemdNamespace::instance().ctl({"start", unit}).code, 0);
  const std::string declared = declare(text("one", kKeys));
  const std::string empty = emptyDeclaration();
  for (const std::string syscall : kGiveBackKillPoints) {
    bool ranThrough = false;
    for (int n = 1; n <= 40 && !ranThrough; ++n) {
      // Declared again: runs with the drop-in.
      Result back = apply(declared);
      ASSERT_EQ(back.code, 0) << back.out << back.err;
      ASSERT_EQ(ctlOut({"show", "-p", "Environment", "--value", unit}), "GREETING=hello");
      const std::string pidBefore = mainPid();
      ranThrough = applyKilledAt(syscall, n, empty);
      // Restarted before the kill (a new main process already): not again.
      const std::string pidKilled = mainPid();
      const bool restartedBefore = pidKilled != pidBefore && pidKilled != "0";
      Result next = apply(empty);
      ASSERT_EQ(next.code, 0) << syscall << " " << n << ": " << next.out << next.err;
      if (restartedBefore) {
        EXPECT_EQ(mainPid(), pidKilled) << syscall << " " << n << ": restarted twice";
      }
      EXPECT_FALSE(std::filesystem::exists(dropinPath())) << syscall << " " << n;
      EXPECT_EQ(active(), "active") << syscall << " " << n;
      EXPECT_NE(mainPid(), pidBefore)
          << syscall << " " << n << ": the restart without the drop-in was lost";
      EXPECT_EQ(ctlOut({"show", "-p", "Environment", "--value", unit}), "") << syscall << " " << n;
      const std::string pidAfter = mainPid();
      Result noop = apply(empty);
      ASSERT_EQ(noop.code, 0) << noop.out << noop.err;
      EXPECT_EQ(mainPid(), pidAfter) << syscall << " " << n << ": restarted twice";
    }
    EXPECT_TRUE(ranThrough) << "no apply ran through within 40 calls of " << syscall;
  }
}

}  // namespace
}  // namespace mesh::e2e
