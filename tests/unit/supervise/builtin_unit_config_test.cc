// The builtin supervisor's unit parsing, on plain strings.
#include <gtest/gtest.h>

#include "supervise/builtin/service_files.hh"
#include "supervise/builtin/unit_config.hh"
#include "util/error.hh"

namespace mesh::supervise::builtin {
namespace {

using Words = std::vector<std::string>;

TEST(BuiltinUnitConfig, SplitsWordsLikeSystemd) {
  EXPECT_EQ(splitWords("/bin/a  b\tc"), (Words{"/bin/a", "b", "c"}));
  EXPECT_EQ(splitWords(R"(/bin/sh -c 'echo "hi there"; exit 3')"),
            (Words{"/bin/sh", "-c", R"(echo "hi there"; exit 3)"}));
  EXPECT_EQ(splitWords(R"(a "b c" d\ e x"y z"w)"), (Words{"a", "b c", "d e", "xy zw"}));
  EXPECT_EQ(splitWords(R"("tab\there")"), (Words{"tab\there"}));
  EXPECT_EQ(splitWords("  "), Words{});
  EXPECT_THROW(splitWords("a 'b"), Error);
}

TEST(BuiltinUnitConfig, ParsesEnvironmentValues) {
  EXPECT_EQ(parseEnvironmentValue(R"(A=1 "B=two words" C=)"),
            (EnvVars{{"A", "1"}, {"B", "two words"}, {"C", ""}}));
  EXPECT_THROW(parseEnvironmentValue("novalue"), Error);
  EXPECT_THROW(parseEnvironmentValue("1A=x"), Error);
}

TEST(BuiltinUnitConfig, ParsesEnvironmentFiles) {
  auto vars = parseEnvironmentFile(
      "# comment\n; another\n\nA=1\n  B = spaced  \nexport C=\"quoted \\\"x\\\"\"\nD='lit $x'\n"
      "not a line\n");
  EXPECT_EQ(vars, (EnvVars{{"A", "1"}, {"B", "spaced"}, {"C", "quoted \"x\""}, {"D", "lit $x"}}));
}

TEST(BuiltinUnitConfig, ParsesTimeSpans) {
  EXPECT_EQ(parseTimeSpanUs("5"), 5'000'000);
  EXPECT_EQ(parseTimeSpanUs("5s"), 5'000'000);
  EXPECT_EQ(parseTimeSpanUs("500ms"), 500'000);
  EXPECT_EQ(parseTimeSpanUs("1min"), 60'000'000);
  EXPECT_EQ(parseTimeSpanUs("1min 30s"), 90'000'000);
  EXPECT_EQ(parseTimeSpanUs("1.5h"), int64_t{5400} * 1'000'000);
  EXPECT_EQ(parseTimeSpanUs("infinity"), kInfinity);
  EXPECT_FALSE(parseTimeSpanUs(""));
  EXPECT_FALSE(parseTimeSpanUs("5 parsecs"));
  EXPECT_FALSE(parseTimeSpanUs("-1"));
}

TEST(BuiltinUnitConfig, ReadsOnlyTheServiceSection) {
  auto keys = parseServiceSection(
      "[Unit]\nDescription=x\nAfter=network.target\n\n[Service]\n# comment\n"
      "ExecStart=/bin/a \\\n  --long\nEnvironment=A=1\nEnvironment=B=2\nEnvironment=\n"
      "Environment=C=3\n[Install]\nWantedBy=multi-user.target\n");
  EXPECT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys["ExecStart"], Words{"/bin/a  --long"});
  EXPECT_EQ(keys["Environment"], Words{"C=3"});  // the empty assignment reset A and B
}

TEST(BuiltinUnitConfig, SubstitutesLikeExecStart) {
  std::map<std::string, std::string> env = {{"A", "x y"}, {"B", "b"}};
  EXPECT_EQ(
      substituteEnvironment({"$A", "${B}-${A}", "$$A", "${MISSING}", "$MISSING", "$", "${"}, env),
      (Words{"x", "y", "b-x y", "$A", "", "$", "${"}));
}

TEST(BuiltinUnitConfig, BuildsAServiceConfig) {
  auto c = parseServiceConfig(parseServiceSection(
      "[Service]\nExecStart=-@/bin/real argv0 --flag\nRestart=on-failure\nRestartSec=2s\n"
      "TimeoutStopSec=0\nUser=nobody\nWorkingDirectory=-/srv/x\nEnvironmentFile=-/etc/x\n"
      "X-LogMaxBytes=4096\n"));
  EXPECT_EQ(c.execPath, "/bin/real");
  EXPECT_EQ(c.argv, (Words{"argv0", "--flag"}));
  EXPECT_TRUE(c.ignoreFailure);
  EXPECT_EQ(c.restart, RestartPolicy::OnFailure);
  EXPECT_EQ(c.restartUs, 2'000'000);
  EXPECT_EQ(c.timeoutStopUs, kInfinity);
  EXPECT_EQ(c.user, "nobody");
  EXPECT_EQ(c.workingDirectory, "/srv/x");
  EXPECT_TRUE(c.workingDirectoryOptional);
  ASSERT_EQ(c.environmentFiles.size(), 1u);
  EXPECT_TRUE(c.environmentFiles[0].optional);
  EXPECT_EQ(c.logMaxBytes, 4096u);

  auto d = parseServiceConfig(parseServiceSection("[Service]\nExecStart=/bin/a\n"));
  EXPECT_EQ(d.restart, RestartPolicy::No);
  EXPECT_EQ(d.restartUs, 100'000);
  EXPECT_EQ(d.timeoutStopUs, 10'000'000);
}

TEST(BuiltinUnitConfig, RejectsWhatItCannotRun) {
  auto parse = [](const std::string& text) {
    return parseServiceConfig(parseServiceSection("[Service]\n" + text));
  };
  EXPECT_THROW(parse("Restart=always\n"), Error);  // no ExecStart
  EXPECT_THROW(parse("ExecStart=+/bin/a\n"), Error);
  EXPECT_THROW(parse("ExecStart=/bin/a\nExecStart=/bin/b\n"), Error);
  EXPECT_THROW(parse("ExecStart=/bin/a\nRestart=sometimes\n"), Error);
  EXPECT_THROW(parse("ExecStart=/bin/a\nRestartSec=soon\n"), Error);
  EXPECT_THROW(parse("ExecStart=/bin/a\nWorkingDirectory=relative\n"), Error);
  try {
    parse("ExecStart=/bin/a\nRestart=sometimes\n");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Restart=sometimes"), std::string::npos);
  }
}

TEST(BuiltinUnitConfig, ReadsExecReload) {
  auto c = parseServiceConfig(
      parseServiceSection("[Service]\nExecStart=/bin/a\nExecReload=-/bin/kill -HUP $MAINPID\n"));
  EXPECT_EQ(c.reload.execPath, "/bin/kill");
  EXPECT_EQ(c.reload.argv, (Words{"/bin/kill", "-HUP", "$MAINPID"}));
  EXPECT_TRUE(c.reload.ignoreFailure);
  EXPECT_FALSE(c.ignoreFailure) << "ExecStart's prefixes are its own";
  EXPECT_TRUE(
      parseServiceConfig(parseServiceSection("[Service]\nExecStart=/bin/a\n")).reload.argv.empty());
  EXPECT_THROW(
      parseServiceConfig(parseServiceSection("[Service]\nExecStart=/bin/a\nExecReload=+/bin/b\n")),
      Error);
  EXPECT_TRUE(
      unsupportedServiceKeys(parseServiceSection("[Service]\nExecStart=/a\nExecReload=/b\n"))
          .empty());
}

TEST(BuiltinUnitConfig, ListsUnsupportedKeys) {
  auto keys = parseServiceSection(
      "[Unit]\nDescription=d\n[Service]\nExecStart=+/bin/a\nExecStartPre=/bin/b\n"
      "PrivateTmp=yes\nType=exec\nRestart=on-watchdog\nLimitNOFILE=1024\n");
  EXPECT_EQ(unsupportedServiceKeys(keys), (Words{"ExecStart=+…", "ExecStartPre", "LimitNOFILE",
                                                 "PrivateTmp", "Restart=on-watchdog"}));
}

TEST(BuiltinUnitConfig, TypeNotifyIsSupportedOtherTypesAreNot) {
  auto ok = parseServiceSection(
      "[Service]\nExecStart=/bin/a\nType=notify\nNotifyAccess=all\nTimeoutStartSec=5s\n");
  EXPECT_EQ(unsupportedServiceKeys(ok), Words{});
  for (const char* type : {"forking", "oneshot", "dbus", "idle", "notify-reload"}) {
    auto keys = parseServiceSection(std::string("[Service]\nExecStart=/bin/a\nType=") + type);
    EXPECT_EQ(unsupportedServiceKeys(keys), Words{std::string("Type=") + type});
  }
}

TEST(BuiltinUnitConfig, ParsesReadinessSettings) {
  auto parse = [](const std::string& service) {
    return parseServiceConfig(parseServiceSection("[Service]\nExecStart=/bin/a\n" + service));
  };
  ServiceConfig simple = parse("");
  EXPECT_EQ(simple.type, ServiceType::Simple);
  EXPECT_EQ(simple.timeoutStartUs, 90'000'000);  // systemd's default
  EXPECT_EQ(simple.notifyAccess, NotifyAccess::All);
  EXPECT_EQ(parse("Type=exec\n").type, ServiceType::Simple);
  EXPECT_EQ(parse("Type=forking\n").type, ServiceType::Simple);  // run as simple, with a warning
  EXPECT_EQ(parse("Type=notify\n").type, ServiceType::Notify);
  EXPECT_EQ(parse("Type=simple\nType=notify\n").type, ServiceType::Notify);  // the last wins
  EXPECT_EQ(parse("TimeoutStartSec=1\n").timeoutStartUs, 1'000'000);
  EXPECT_EQ(parse("TimeoutStartSec=500ms\n").timeoutStartUs, 500'000);
  EXPECT_EQ(parse("TimeoutStartSec=1min 30s\n").timeoutStartUs, 90'000'000);
  EXPECT_EQ(parse("TimeoutStartSec=infinity\n").timeoutStartUs, kInfinity);
  EXPECT_EQ(parse("TimeoutStartSec=0\n").timeoutStartUs, kInfinity);  // systemd: 0 is no timeout
  EXPECT_THROW(parse("TimeoutStartSec=soon\n"), Error);
  EXPECT_EQ(parse("NotifyAccess=none\n").notifyAccess, NotifyAccess::None);
  EXPECT_EQ(parse("NotifyAccess=main\n").notifyAccess, NotifyAccess::Main);
  EXPECT_EQ(parse("NotifyAccess=exec\n").notifyAccess, NotifyAccess::Main);
  EXPECT_EQ(parse("NotifyAccess=all\n").notifyAccess, NotifyAccess::All);
  EXPECT_THROW(parse("NotifyAccess=everyone\n"), Error);
}

TEST(BuiltinServiceFiles, StatusRoundTrips) {
  Status s;
  s.supervisorPid = 10;
  s.pid = 11;
  s.startTicks = 12345;
  s.state = "backoff";
  s.sinceUs = 1700000000000000;
  s.crashRestarts = 3;
  s.lastExit = "exited with status 1";
  s.unitDigest = "sha256:00";
  s.statusText = "serving 3 clients";
  auto back = Status::parse(s.render());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->render(), s.render());
  EXPECT_EQ(back->statusText, "serving 3 clients");
  EXPECT_FALSE(Status::parse("{\"pid\": 1"));
  EXPECT_FALSE(Status::parse("{}"));
}

TEST(BuiltinServiceFiles, RepliesRoundTrip) {
  auto ok = Reply::parse(Reply::ok(42, "started").render());
  EXPECT_EQ(ok.kind, Reply::Kind::Ok);
  EXPECT_EQ(ok.pid, 42);
  EXPECT_EQ(ok.detail, "started");
  auto fail = Reply::parse(Reply::fail("exited with status 3:\nboom").render());
  EXPECT_EQ(fail.kind, Reply::Kind::Fail);
  EXPECT_EQ(fail.detail, "exited with status 3: boom");
  EXPECT_EQ(Reply::parse("busy\n").kind, Reply::Kind::Busy);
  EXPECT_EQ(Reply::parse("garbage").kind, Reply::Kind::Fail);
}

TEST(BuiltinServiceFiles, RejectsServiceNamesThatAreNotPlainNames) {
  EXPECT_NO_THROW(validateServiceName("node-tools.service"));
  for (const char* bad : {"", "..", ".hidden", "a/b", "a b"})
    EXPECT_THROW(validateServiceName(bad), Error) << bad;
}

TEST(BuiltinServiceFiles, ProcessStartTicksIdentifyAProcess) {
  auto mine = processStartTicks(::getpid());
  ASSERT_TRUE(mine);
  EXPECT_TRUE(processIsAlive(::getpid(), *mine));
  EXPECT_FALSE(processIsAlive(::getpid(), *mine + 1));  // a reused pid looks like this
  EXPECT_FALSE(processStartTicks(0));
}

}  // namespace
}  // namespace mesh::supervise::builtin
