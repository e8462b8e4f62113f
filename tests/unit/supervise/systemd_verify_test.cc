// Units as mesh-host renders them pass `systemd-analyze verify` with no warning.
// verify exits 0 on unknown keys and bad values (it only warns), so any output at
// all counts as a failure here. It runs offline; no systemd needed.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "../../support/temp_dir.hh"
#include "backend_fixture.hh"
#include "util/fs.hh"

namespace mesh::testing {
namespace {

const std::string kHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

class SystemdVerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int status = 0;
    runCommand("command -v systemd-analyze >/dev/null 2>&1", &status);
    if (status != 0) GTEST_SKIP() << "systemd-analyze is not installed (scripts/install-deps)";
  }

  // A bundle's program at <stateDir>/bundles/<hex>/bin/app; returns its path.
  static std::string writeApp(const std::string& stateDir) {
    auto app = stateDir + "/bundles/" + kHex + "/bin/app";
    atomicWrite(app, "#!/bin/sh\nexec sleep infinity\n", 0755);
    return app;
  }

  // `systemd-analyze verify`'s exit code and everything it printed. It leaves
  // /run/systemd/systemd-units-load behind; removed again unless it was there.
  struct Verdict {
    int rc = -1;
    std::string output;
  };
  static Verdict verify(const std::string& args) {
    const std::string marker = "/run/systemd/systemd-units-load";
    bool hadMarker = lstatPath(marker).has_value();
    Verdict v;
    v.output = runCommand("systemd-analyze verify --man=no " + args + " 2>&1", &v.rc);
    if (!hadMarker) ::unlink(marker.c_str());
    return v;
  }

  mesh::test::TempDir tmp{"mesh-verify-test"};
  std::string dir = tmp.path;
};

TEST_F(SystemdVerifyTest, RenderedUnitPassesWithNoWarnings) {
  auto app = writeApp(dir + "/state");
  auto path = dir + "/units/demo.service";
  atomicWrite(path,
              renderTestUnit(
                  "demo.runtime",
                  {{"Environment", "A=1"}, {"ExecStart", app + " serve"}, {"Restart", "always"}}),
              0644);
  auto v = verify(shellQuote(path));
  EXPECT_EQ(v.rc, 0) << v.output;
  EXPECT_EQ(v.output, "");
}

TEST_F(SystemdVerifyTest, RenderedUnitWithMoreKeysPassesWithNoWarnings) {
  auto app = writeApp(dir + "/state");
  auto path = dir + "/units/demo.service";
  std::string text = renderTestUnit("demo.runtime", {{"Environment", "A=1"},
                                                     {"ExecStart", app + " serve --port 7070"},
                                                     {"Group", "daemon"},
                                                     {"Restart", "on-failure"},
                                                     {"RestartSec", "2"},
                                                     {"TimeoutStopSec", "10"},
                                                     {"User", "daemon"},
                                                     {"WorkingDirectory", dir}});
  // A key given as an array renders as one line per value.
  text.insert(text.find("Environment=A=1\n") + 16, "Environment=B=2\n");
  atomicWrite(path, text, 0644);
  auto v = verify(shellQuote(path));
  EXPECT_EQ(v.rc, 0) << v.output;
  EXPECT_EQ(v.output, "");
}

TEST_F(SystemdVerifyTest, ProductionPathsPassUnderAnAlternateRoot) {
  // The exact shape a node gets: the program under /var/lib/mesh-host, the unit in
  // /etc/systemd/system. --root needs the vendor units for the default dependencies.
  auto root = dir + "/root";
  writeApp(root + "/var/lib/mesh-host");
  int status = 0;
  runCommand("mkdir -p " + shellQuote(root + "/lib/systemd") + " && cp -a /lib/systemd/system " +
                 shellQuote(root + "/lib/systemd/"),
             &status);
  ASSERT_EQ(status, 0);
  atomicWrite(root + "/etc/systemd/system/demo.service",
              renderTestUnit("demo.runtime", {{"Environment", "A=1"},
                                              {"ExecStart", "/var/lib/mesh-host/bundles/" + kHex +
                                                                "/bin/app serve"},
                                              {"Restart", "always"}}),
              0644);
  auto v = verify("--root=" + shellQuote(root) + " /etc/systemd/system/demo.service");
  EXPECT_EQ(v.rc, 0) << v.output;
  EXPECT_EQ(v.output, "");
}

TEST_F(SystemdVerifyTest, UserNobodyIsAWarning) {
  // systemd warns that services sharing "nobody" is unsafe: declarations should
  // name a user of their own (documented in docs/supervisor-systemd.md).
  auto app = writeApp(dir + "/state");
  auto path = dir + "/units/demo.service";
  atomicWrite(path, renderTestUnit("demo.runtime", {{"ExecStart", app}, {"User", "nobody"}}), 0644);
  auto v = verify(shellQuote(path));
  EXPECT_EQ(v.rc, 0);
  EXPECT_NE(v.output.find("Special user nobody configured, this is not safe!"), std::string::npos)
      << v.output;
}

TEST_F(SystemdVerifyTest, AWarningIsCaughtThoughTheExitCodeIsZero) {
  // Guards the two checks above: they would pass on a verify that says nothing.
  auto app = writeApp(dir + "/state");
  auto path = dir + "/units/demo.service";
  atomicWrite(path, renderTestUnit("demo.runtime", {{"ExecStart", app}, {"Typo", "1"}}), 0644);
  auto v = verify(shellQuote(path));
  EXPECT_EQ(v.rc, 0);
  EXPECT_NE(v.output.find("Unknown key 'Typo'"), std::string::npos) << v.output;
}

TEST_F(SystemdVerifyTest, AMissingProgramFails) {
  auto path = dir + "/units/demo.service";
  atomicWrite(path, renderTestUnit("demo.runtime", {{"ExecStart", dir + "/nope/bin/app"}}), 0644);
  auto v = verify(shellQuote(path));
  EXPECT_NE(v.rc, 0);
  EXPECT_NE(v.output.find("is not executable"), std::string::npos) << v.output;
}

}  // namespace
}  // namespace mesh::testing
