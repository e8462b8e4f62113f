// The `service` kind against a real systemd (booted in a namespace by
// tests/systemd/sdns.sh): a unit installed "as the vendor's" — in systemd's unit
// search path, outside mesh-host's --unit-dir, loaded by a daemon-reload as a
// package's postinst would — is started, enabled, given a drop-in, restarted on
// restart-on, reloaded on reload-on, left untouched when as declared, and put
// back as found once no longer declared; the vendor's file is never written.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "service_fixture.hh"

namespace mesh::e2e {
namespace {

TEST_F(ServiceKind, IsStartedEnabledAndGivenItsDropinThenLeftAloneWhenAsDeclared) {
  const std::string keys =
      "state = \"running\"\nenabled = true\ndropin = { Environment = \"GREETING=hello\" }";
  ASSERT_EQ(active(), "inactive");
  ASSERT_EQ(enabled(), "disabled");
  const std::string vendorBefore = slurp(vendorFile);

  Result first = apply(declare(text("one", keys)));
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  auto o = outcomeOf(first.json(), "web.vendor");
  EXPECT_EQ(o["outcome"], "updated") << o;
  EXPECT_EQ(o["reason"], "adopted") << o;
  EXPECT_NE(o["detail"].get<std::string>().find("wrote " + unit + ".d/50-mesh-host.conf"),
            std::string::npos)
      << o;
  EXPECT_EQ(active(), "active");
  EXPECT_EQ(enabled(), "enabled");
  EXPECT_NE(slurp(dropinPath()).find("[Service]\nEnvironment=GREETING=hello\n"), std::string::npos);
  EXPECT_EQ(ctlOut({"show", "-p", "Environment", "--value", unit}), "GREETING=hello");
  EXPECT_EQ(slurp(vendorFile), vendorBefore) << "the vendor's unit was written";

  // As declared: unchanged, and not one job or daemon-reload sent.
  const std::string pid = mainPid();
  Result again = apply(declare(text("one", keys)));
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_EQ(outcomeOf(again.json(), "web.vendor")["outcome"], "unchanged");
  const auto calls = again.json()["summary"]["supervisor"];
  EXPECT_EQ(calls["start"], 0) << calls;
  EXPECT_EQ(calls["restart"], 0) << calls;
  EXPECT_EQ(calls["stop"], 0) << calls;
  EXPECT_EQ(calls["reload"], 0) << calls;
  EXPECT_EQ(calls["reload_service"], 0) << calls;
  EXPECT_EQ(mainPid(), pid);
}

TEST_F(ServiceKind, RestartsOnRestartOnReloadsOnReloadOnAndOnANewDropin) {
  const std::string keys = "state = \"running\"\ndropin = { Environment = \"GREETING=hello\" }";
  ASSERT_EQ(apply(declare(text("one", keys))).code, 0);
  const std::string pid1 = mainPid();

  // restart-on: restarted once, the reason names the cause.
  Result changed = apply(declare(text("two", keys)));
  ASSERT_EQ(changed.code, 0) << changed.out << changed.err;
  auto o = outcomeOf(changed.json(), "web.vendor");
  EXPECT_EQ(o["outcome"], "updated") << o;
  EXPECT_EQ(o["reason"], "restart-on web.config") << o;
  EXPECT_EQ(o["restarted"], true) << o;
  const std::string pid2 = mainPid();
  EXPECT_NE(pid2, pid1);

  // reload-on: reloaded in place, the pid stays.
  write("/etc/web/site", "edited");
  Result reloaded = apply(declare(text("two", keys)));
  ASSERT_EQ(reloaded.code, 0) << reloaded.out << reloaded.err;
  o = outcomeOf(reloaded.json(), "web.vendor");
  EXPECT_EQ(o["reason"], "reload-on web.site") << o;
  EXPECT_EQ(reloaded.json()["summary"]["supervisor"]["reload_service"], 1);
  EXPECT_EQ(mainPid(), pid2);

  // A changed drop-in: written, and the running service restarted to take it.
  const std::string keys2 = "state = \"running\"\ndropin = { Environment = \"GREETING=bye\" }";
  Result redrop = apply(declare(text("two", keys2)));
  ASSERT_EQ(redrop.code, 0) << redrop.out << redrop.err;
  o = outcomeOf(redrop.json(), "web.vendor");
  EXPECT_EQ(o["outcome"], "updated") << o;
  EXPECT_EQ(o["restarted"], true) << o;
  EXPECT_NE(mainPid(), pid2);
  EXPECT_EQ(ctlOut({"show", "-p", "Environment", "--value", unit}), "GREETING=bye");
}

TEST_F(ServiceKind, ARestartOwedWhenTheCycleDiedIsMadeByTheNextOne) {
  const std::string keys = "state = \"running\"";
  ASSERT_EQ(apply(declare(text("one", keys))).code, 0);
  const std::string pid1 = mainPid();
  // The config changes, and mesh-host dies before the restart it owes.
  Result died =
      mesh({"apply", declare(text("two", keys))}, {{"MESH_HOST_CRASH_AT", "before-restart"}});
  ASSERT_EQ(died.code, 86) << died.out << died.err;
  EXPECT_EQ(mainPid(), pid1);
  Result next = apply(declare(text("two", keys)));
  ASSERT_EQ(next.code, 0) << next.out << next.err;
  auto o = outcomeOf(next.json(), "web.vendor");
  EXPECT_EQ(o["restarted"], true) << o;
  EXPECT_NE(o["reason"].get<std::string>().find("owed restart: web.config"), std::string::npos)
      << o;
  EXPECT_NE(mainPid(), pid1);
  // Paid once: the cycle after restarts nothing.
  const std::string pid2 = mainPid();
  Result after = apply(declare(text("two", keys)));
  EXPECT_EQ(outcomeOf(after.json(), "web.vendor")["outcome"], "unchanged");
  EXPECT_EQ(mainPid(), pid2);
}

TEST_F(ServiceKind, NoLongerDeclaredItsDropinGoesAndTheUnitIsLeftAsFound) {
  // Found stopped and disabled: started, enabled, given a drop-in…
  const std::string keys =
      "state = \"running\"\nenabled = true\ndropin = { Environment = \"GREETING=hello\" }";
  ASSERT_EQ(apply(declare(text("one", keys))).code, 0);
  ASSERT_EQ(active(), "active");
  ASSERT_EQ(enabled(), "enabled");
  // …then no longer declared: put back stopped and disabled, the drop-in gone.
  Result gone = apply(declare("node = \"test\"\nempty = true\n", "empty.toml"));
  ASSERT_EQ(gone.code, 0) << gone.out << gone.err;
  auto o = outcomeOf(gone.json(), "web.vendor");
  EXPECT_EQ(o["outcome"], "removed") << o;
  EXPECT_FALSE(std::filesystem::exists(dropinPath()));
  EXPECT_EQ(active(), "inactive");
  EXPECT_EQ(enabled(), "disabled");
  EXPECT_TRUE(std::filesystem::exists(vendorFile)) << "the vendor's unit was removed";
}

TEST_F(ServiceKind, FoundRunningAndEnabledItIsGivenBackRunningAndEnabled) {
  auto& ns = SystemdNamespace::instance();
  ASSERT_EQ(ns.ctl({"enable", "--now", unit}).code, 0);
  ASSERT_EQ(active(), "active");
  Result stopped = apply(declare(text("one", "state = \"stopped\"\nenabled = false")));
  ASSERT_EQ(stopped.code, 0) << stopped.out << stopped.err;
  EXPECT_EQ(outcomeOf(stopped.json(), "web.vendor")["outcome"], "updated");
  EXPECT_EQ(active(), "inactive");
  EXPECT_EQ(enabled(), "disabled");
  // Stopped as declared: the config's change restarts nothing.
  Result quiet = apply(declare(text("two", "state = \"stopped\"\nenabled = false")));
  EXPECT_EQ(outcomeOf(quiet.json(), "web.vendor")["outcome"], "unchanged");
  EXPECT_EQ(active(), "inactive");
  Result gone = apply(declare("node = \"test\"\nempty = true\n", "empty.toml"));
  ASSERT_EQ(gone.code, 0) << gone.out << gone.err;
  EXPECT_EQ(outcomeOf(gone.json(), "web.vendor")["outcome"], "removed");
  EXPECT_EQ(active(), "active");
  EXPECT_EQ(enabled(), "enabled");
}

// `status` shows a declared service as it shows a process: its state, its main
// pid; one declared stopped is not down.
TEST_F(ServiceKind, StatusShowsTheServiceRunningOrNot) {
  ASSERT_EQ(apply(declare(text("one", "state = \"running\""))).code, 0);
  Result st = mesh({"status", "--json"});
  ASSERT_EQ(st.code, 0) << st.out << st.err;
  auto serviceOf = [](const nlohmann::json& status) {
    for (const auto& r : status["resources"])
      if (r["id"] == "web.vendor") return r["service"];
    return nlohmann::json();
  };
  nlohmann::json svc = serviceOf(st.json());
  ASSERT_TRUE(svc.is_object()) << st.out;
  EXPECT_EQ(svc["name"], unit);
  EXPECT_EQ(svc["active"], true);
  EXPECT_EQ(svc["running"], true);
  EXPECT_EQ(svc["state"], "active");
  EXPECT_EQ(std::to_string(svc["pid"].get<int>()), mainPid());
  Result verbose = mesh({"status", "-v"});
  EXPECT_NE(verbose.out.find("web.vendor (web): "), std::string::npos) << verbose.out;
  EXPECT_NE(verbose.out.find(", " + unit + " active pid " + mainPid()), std::string::npos)
      << verbose.out;

  // Stopped behind mesh-host's back: down, and the node fails.
  ASSERT_EQ(SystemdNamespace::instance().ctl({"stop", unit}).code, 0);
  Result down = mesh({"status"});
  EXPECT_EQ(down.code, 1) << down.out << down.err;
  EXPECT_NE(down.out.find("down web.vendor (web): " + unit + " is inactive"), std::string::npos)
      << down.out;

  // Declared stopped: not running, and healthy.
  ASSERT_EQ(apply(declare(text("one", "state = \"stopped\""))).code, 0);
  Result stopped = mesh({"status", "--json"});
  EXPECT_EQ(stopped.code, 0) << stopped.out << stopped.err;
  svc = serviceOf(stopped.json());
  EXPECT_EQ(svc["running"], false) << svc;
  EXPECT_EQ(svc["pid"], 0) << svc;
}

TEST_F(ServiceKind, AUnitNotOnTheNodeFailsSayingSo) {
  const std::string decl = declare(R"(
[module.web.service.ghost]
unit = "no-such-vendor-unit.service"
state = "running"
)");
  Result r = apply(decl);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto o = outcomeOf(r.json(), "web.ghost");
  EXPECT_EQ(o["outcome"], "failed");
  EXPECT_NE(o["reason"].get<std::string>().find("is not on this node"), std::string::npos) << o;
}

// No namespace systemd needed: refused before anything is looked at.
class ServiceKindBuiltin : public Node {};

TEST_F(ServiceKindBuiltin, IsRefusedAtPlanAndApplyUnderTheBuiltinSupervisor) {
  extraArgs = {"--supervisor", "builtin"};
  const std::string decl = declare(R"(
[module.web.service.nginx]
unit = "nginx.service"
state = "running"
)");
  for (const char* verb : {"plan", "apply"}) {
    Result r = mesh({verb, decl});
    EXPECT_EQ(r.code, 2) << verb << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("needs --supervisor systemd"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("web.nginx"), std::string::npos) << r.err;
  }
  // Nothing recorded: no generation, no cycle.
  EXPECT_EQ(mesh({"generations", "--json"}).json()["generations"].size(), 0u);
  EXPECT_EQ(mesh({"history", "--json"}).json()["cycles"].size(), 0u);
}

}  // namespace
}  // namespace mesh::e2e
