// How the service is run: environment, working directory, user and group, log
// rotation, and the keys the builtin supervisor reports it cannot honour.
#include <grp.h>
#include <pwd.h>

#include "builtin_fixture.hh"
#include "util/error.hh"

namespace mesh::supervise::test {
namespace {

TEST_F(BuiltinTest, EnvironmentEnvironmentFileAndWorkingDirectoryAreHonoured) {
  std::string work = dir + "/work";
  makeDirs(work);
  atomicWrite(dir + "/env", "# a comment\nC=three\nexport D=\"four four\"\nA=overridden\n", 0644);
  startUnit("demo.service", {{"Environment", "A=1 \"B=two words\""},
                             {"EnvironmentFile", dir + "/env"},
                             {"EnvironmentFile", "-" + dir + "/missing-env"},
                             {"WorkingDirectory", work},
                             {"ExecStart",
                              "/bin/sh -c 'echo \"$$A|$$B|$$C|$$D|$$(pwd)|$$PATH\" > out.tmp; "
                              "mv out.tmp out; exec sleep 1000'"}});
  ASSERT_TRUE(awaitFile(work + "/out"));
  EXPECT_EQ(readFile(work + "/out").value(),
            "overridden|two words|three|four four|" + work +
                "|/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n");
}

TEST_F(BuiltinTest, ExecStartSubstitutesVariables) {
  startUnit("demo.service", {{"Environment", "GREETING=hi PORT=7070 \"ARGS=a b\""},
                             {"ExecStart", "/bin/sh -c 'echo \"$$@\" > " + dir + "/args.tmp; mv " +
                                               dir + "/args.tmp " + dir +
                                               "/args; exec sleep 1000' sh "
                                               "${GREETING}-there --port=${PORT} $ARGS"}});
  ASSERT_TRUE(awaitFile(dir + "/args"));
  EXPECT_EQ(readFile(dir + "/args").value(), "hi-there --port=7070 a b\n");
}

TEST_F(BuiltinTest, AMissingRequiredEnvironmentFileFailsTheStart) {
  sup->install(makeUnit("demo.service",
                        {{"EnvironmentFile", dir + "/missing"}, {"ExecStart", "/bin/sleep 1000"}}));
  try {
    sup->start("demo.service");
    FAIL() << "start succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("EnvironmentFile=" + dir + "/missing"), std::string::npos)
        << e.what();
  }
}

TEST_F(BuiltinTest, UserAndGroupAreHonoured) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  struct passwd* nobody = ::getpwnam("nobody");
  struct group* nogroup = ::getgrnam("nogroup");
  if (!nobody || !nogroup) GTEST_SKIP() << "no nobody/nogroup here";
  uid_t uid = nobody->pw_uid;
  gid_t gid = nogroup->gr_gid;
  std::string out = dir + "/ids";
  makeDirs(out);
  ::chmod(out.c_str(), 0777);
  startUnit("demo.service",
            {{"User", "nobody"},
             {"Group", "nogroup"},
             {"ExecStart", "/bin/sh -c 'echo \"$$(id -u) $$(id -g) $$USER\" > " + out + "/t; mv " +
                               out + "/t " + out + "/ids; exec sleep 1000'"}});
  ASSERT_TRUE(awaitFile(out + "/ids"));
  EXPECT_EQ(readFile(out + "/ids").value(),
            std::to_string(uid) + " " + std::to_string(gid) + " nobody\n");
}

TEST_F(BuiltinTest, AnUnknownUserFailsTheStart) {
  sup->install(
      makeUnit("demo.service", {{"User", "no-such-user-here"}, {"ExecStart", "/bin/sleep 1000"}}));
  try {
    sup->start("demo.service");
    FAIL() << "start succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("User=no-such-user-here: no such user"), std::string::npos)
        << e.what();
  }
}

TEST_F(BuiltinTest, TheLogRotatesBySize) {
  startUnit("demo.service", {{"X-LogMaxBytes", "1000"},
                             {"ExecStart",
                              "/bin/sh -c 'i=0; while [ $$i -lt 200 ]; do echo \"line $$i of the "
                              "rotation test...........\"; i=$$((i+1)); done; exec sleep 1000'"}});
  const std::string logPath = paths("demo.service").log;
  ASSERT_TRUE(awaitLog("demo.service", "line 199 of")) << log("demo.service");
  EXPECT_TRUE(lstatPath(logPath + ".1"));
  EXPECT_TRUE(lstatPath(logPath + ".2"));
  EXPECT_TRUE(lstatPath(logPath + ".3"));
  EXPECT_FALSE(lstatPath(logPath + ".4"));
  for (const char* suffix : {"", ".1", ".2", ".3"}) {
    auto text = readFile(logPath + suffix).value();
    EXPECT_LE(text.size(), 1000u) << suffix;
    EXPECT_EQ(text.back(), '\n') << suffix;  // rotated between lines
  }
  EXPECT_NE(readFile(logPath + ".1").value().find(" of the rotation test"), std::string::npos);
  // Every line starts with its time, RFC 3339 in UTC: "2026-11-30T12:00:00.123Z line 7 …".
  const auto text = readFile(logPath + ".1").value();
  for (size_t at = 0; at < text.size(); at = text.find('\n', at) + 1) {
    const std::string line = text.substr(at, text.find('\n', at) - at);
    ASSERT_GE(line.size(), 25u) << line;
    EXPECT_EQ(line[4], '-') << line;
    EXPECT_EQ(line[10], 'T') << line;
    EXPECT_EQ(line[19], '.') << line;
    EXPECT_EQ(line.substr(23, 2), "Z ") << line;
  }
}

TEST_F(BuiltinTest, UnsupportedKeysAreReported) {
  Unit u = makeUnit("demo.service", {{"ExecStart", "/bin/true"},
                                     {"ExecStartPre", "/bin/true"},
                                     {"PrivateTmp", "yes"},
                                     {"Type", "forking"},
                                     {"Environment", "A=1"},
                                     {"Restart", "always"},
                                     {"RestartSec", "5"},
                                     {"TimeoutStopSec", "1min"},
                                     {"User", "nobody"},
                                     {"WorkingDirectory", "/"}});
  std::vector<std::string> expected = {"ExecStartPre", "PrivateTmp", "Type=forking"};
  EXPECT_EQ(sup->unsupportedKeys(u), expected);
  u.service.clear();  // read from the text alone
  EXPECT_EQ(sup->unsupportedKeys(u), expected);
  EXPECT_TRUE(
      sup->unsupportedKeys(makeUnit("x.service", {{"ExecStart", "/bin/true"}, {"Type", "simple"}}))
          .empty());
  EXPECT_TRUE(sup->unsupportedKeys(makeUnit("x.service", {{"ExecStart", "/bin/true"},
                                                          {"Type", "notify"},
                                                          {"NotifyAccess", "all"},
                                                          {"TimeoutStartSec", "30s"}}))
                  .empty());
}

}  // namespace
}  // namespace mesh::supervise::test
