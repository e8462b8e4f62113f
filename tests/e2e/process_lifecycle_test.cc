// A process's life where it meets the supervisor, with one rule on both backends:
// a service that does not stay up after its start is `failed` with its exit
// status and its last line of output; what mesh-host
// installed is its own from the moment it installs it, so removal always stops
// and removes it; a crash loop the supervisor handles is reported failing, never
// started over by mesh-host; and a process removed while another takes its
// service name in the same cycle is stopped before the new one is installed.
#include <fmt/format.h>
#include <signal.h>

#include <filesystem>

#include "process_fixture.hh"
#include "util/faults.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

class ProcessLife : public ProcessNode {
 protected:
  // The failing service's last line of output, as printf(1) writes it: with an
  // ESC (bytes from outside, escaped where shown), as the reason must carry it.
  static constexpr const char* kLastLine = "config \\033[1mbroken\\033[0m at line 7";
  static constexpr const char* kLastLineBytes = "config \x1b[1mbroken\x1b[0m at line 7";

  // A service that says why and exits 1 at once; its supervisor would restart it
  // after `restartSec`.
  std::string failing(const std::string& restartSec = "30", const std::string& extra = "") {
    if (failBundle.empty())
      failBundle =
          publish(makeArchive({{"bin/fail", "#!/bin/sh\necho starting\nprintf '" +
                                                std::string(kLastLine) + "\\n'\nexit 1\n"}},
                              "chmod 755 bin/fail && tar -cf out bin"));
    return fmt::format(R"(
[module.{0}.process.runtime]
bundle = "{1}"
unit = {{ ExecStart = "{{bundle}}/bin/fail", Restart = "always", RestartSec = "{2}"{3} }}
)",
                       module, failBundle, restartSec, extra);
  }

  std::string unitFile() const { return SystemdNamespace::instance().unitDir() + "/" + service(); }
  std::string wantsLink() const {
    return SystemdNamespace::instance().unitDir() + "/multi-user.target.wants/" + service();
  }

  // Nothing of the service is left installed or running.
  void expectGone() {
    if (GetParam() == "systemd") {
      EXPECT_FALSE(fs::exists(unitFile())) << "its unit file stays";
      EXPECT_FALSE(fs::is_symlink(wantsLink())) << "its enable link stays";
      Result active = SystemdNamespace::instance().ctl({"is-active", service()});
      EXPECT_NE(active.out, "active\n") << active.out;
      EXPECT_NE(active.out, "activating\n") << "still crash-looping: " << active.out;
    } else {
      EXPECT_FALSE(fs::exists(stateDir() + "/services/" + service())) << "its unit stays";
      // No supervisor is left to restart it.
      EXPECT_FALSE(supervisorRuns()) << "a supervisor still runs";
    }
  }

  // Whether a builtin supervisor of this node's service runs (tests running
  // beside this one have supervisors of their own for the same service name).
  bool supervisorRuns() {
    return runCommand(
               {"pgrep", "-f", "mesh-host-supervis[e] .*" + stateDir() + "/services/" + service()})
               .code == 0;
  }

  std::string failBundle;
};

// Item 3: the same declaration — a service that exits 1 at once, Restart=always —
// is `failed`, exit 1, on both backends (systemd said `created … running as`,
// exit 0, then `unchanged`), with its exit status and its last line of output
// (the systemd backend reads it from the journal, this run's entries only).
TEST_P(ProcessLife, AServiceThatExitsAtOnceFailsOnBothBackends) {
  Result r = apply(declare(failing("100ms")));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto o = outcomeOf(r.json(), id());
  EXPECT_EQ(o["outcome"], "failed") << o.dump();
  const std::string why = o["reason"];
  EXPECT_NE(why.find("start of " + service() + " failed: exited with status 1"), std::string::npos)
      << why;
  EXPECT_NE(why.find(std::string(": ") + kLastLineBytes), std::string::npos) << why;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "a raw ESC in the JSON: " << r.out;
  if (GetParam() == "systemd") {
    EXPECT_NE(why.find("; see journalctl -u " + service()), std::string::npos) << why;
  }
  Result st = mesh({"status"});
  EXPECT_EQ(st.code, 1) << st.out;
}

// A service whose first run fails and whose next, started by Restart= before
// mesh-host looks (RestartSec=0), stays up: the unit's Result and ExecMainStatus
// are then the new run's ("success", nothing yet), and the systemd reason said
// "it stopped (Result=success)". How the run mesh-host started ended is still
// said — on systemd from the journal's "Main process exited" entry.
TEST_P(ProcessLife, AStartRestartedBeforeTheLookStillSaysHowItEnded) {
  const std::string marker = root + "/first-run-done";
  const std::string bundle = publish(
      // The first run ends at once (`: >`, no process of its own), so that it is often
      // restarted before the backend has read the pid its start job left: that pid is
      // then the next run's, and only NRestarts tells.
      makeArchive({{"bin/once", "#!/bin/sh\n[ -e '" + marker + "' ] && exec sleep 600\n: > '" +
                                    marker + "'\necho not yet\nexit 3\n"}},
                  "chmod 755 bin/once && tar -cf out bin"));
  Result r = apply(declare(fmt::format(R"(
[module.{0}.process.runtime]
bundle = "{1}"
unit = {{ ExecStart = "{{bundle}}/bin/once", Restart = "always", RestartSec = "0" }}
)",
                                       module, bundle)));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto o = outcomeOf(r.json(), id());
  EXPECT_EQ(o["outcome"], "failed") << o.dump();
  const std::string why = o["reason"];
  EXPECT_NE(why.find("start of " + service() + " failed: exited with status 3"), std::string::npos)
      << why;
  if (GetParam() == "systemd") {  // the case itself: systemd restarts at once
    EXPECT_NE(why.find("restarted by Restart= as pid"), std::string::npos) << why;
  }
  EXPECT_EQ(why.find("Result=success"), std::string::npos) << why;
}

// Item 3: the last line is bytes from outside: shown escaped on a terminal, on
// both backends alike.
TEST_P(ProcessLife, TheLastLineOfAFailedStartIsShownEscaped) {
  Result r = apply(declare(failing()), /*json=*/false);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("config \\e[1mbroken\\e[0m at line 7"), std::string::npos) << r.out;
  EXPECT_EQ((r.out + r.err).find('\x1b'), std::string::npos) << "a raw ESC: " << r.out << r.err;
}

// Item 3: the warning naming keys the builtin supervisor cannot honour is printed
// by `plan` and — what was lost — by the `apply` whose start then fails.
TEST_P(ProcessLife, TheUnsupportedKeysWarningSurvivesAFailedStart) {
  const auto decl = declare(failing("30", ", RemainAfterExit = \"yes\""));
  Result p = plan(decl, true);
  Result r = apply(decl);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto planned = outcomeOf(p.json(), id());
  auto applied = outcomeOf(r.json(), id());
  EXPECT_EQ(applied["outcome"], "failed") << applied.dump();
  if (GetParam() == "builtin") {
    EXPECT_NE(planned.value("warning", "").find("RemainAfterExit"), std::string::npos)
        << planned.dump();
    EXPECT_EQ(applied.value("warning", ""), planned.value("warning", "")) << applied.dump();
  } else {
    EXPECT_EQ(applied.value("warning", ""), "") << applied.dump();  // systemd honours every key
  }
}

// Item 2: a process whose first start failed is mesh-host's all the same: when it
// leaves the declaration it is stopped and removed (it was `0 removed`, its
// supervisor restarting it for ever, its systemd unit and enable link left), and
// until then `status` shows it failing (it showed "0 resource(s)").
TEST_P(ProcessLife, AFailedFirstStartIsOwnedAndRemoved) {
  Result r = apply(declare(failing()));
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  ASSERT_EQ(outcomeOf(r.json(), id())["outcome"], "failed") << r.out;
  Result st = mesh({"status"});
  EXPECT_EQ(st.code, 1) << st.out;
  EXPECT_NE(st.out.find("1 resource(s)"), std::string::npos) << st.out;
  EXPECT_EQ(st.out.find("0 failing"), std::string::npos) << st.out;
  if (GetParam() == "builtin") {
    EXPECT_TRUE(supervisorRuns()) << "its supervisor is not found: the look below proves nothing";
  }

  Result gone = apply(declare("node = \"test\"\nempty = true\n", "empty.toml"));
  EXPECT_EQ(gone.code, 0) << gone.out << gone.err;
  auto o = outcomeOf(gone.json(), id());
  EXPECT_EQ(o["outcome"], "removed") << gone.out;
  EXPECT_EQ(o["detail"], "stopped and removed " + service()) << o.dump();
  expectGone();
  Result after = mesh({"status"});
  EXPECT_EQ(after.code, 0) << after.out;
}

// Item 2: owned from the moment it is installed — a cycle killed right after the
// unit was written (before any record of its outcome) still leaves a record that
// removes it.
TEST_P(ProcessLife, AnInstallCutShortIsOwnedAndRemoved) {
  Result crashed = mesh({"apply", declare(text()), "--json"},
                        {{"MESH_HOST_CRASH_AT", crash::kAfterUnitInstalled}});
  ASSERT_EQ(crashed.code, kCrashExitCode) << crashed.out << crashed.err;
  Result gone = apply(declare("node = \"test\"\nempty = true\n", "empty.toml"));
  EXPECT_EQ(gone.code, 0) << gone.out << gone.err;
  EXPECT_EQ(outcomeOf(gone.json(), id())["outcome"], "removed") << gone.out;
  expectGone();
}

// Item 7: a crash loop its supervisor handles (Restart=, RestartSec=) is reported
// failing, and mesh-host starts nothing: a cycle every second used to start it
// every cycle, overriding the supervisor's backoff.
TEST_P(ProcessLife, ACrashLoopIsReportedFailingNotStartedAgain) {
  const auto decl = declare(failing("30"));
  ASSERT_EQ(apply(decl).code, 1);
  for (int cycle = 0; cycle < 2; ++cycle) {
    Result r = apply(decl);
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    auto o = outcomeOf(r.json(), id());
    EXPECT_EQ(o["outcome"], "failed") << o.dump();
    EXPECT_NE(o["reason"].get<std::string>().find("left to its supervisor, not started"),
              std::string::npos)
        << o.dump();
    auto calls = r.json()["summary"]["supervisor"];
    EXPECT_EQ(calls["start"], 0) << calls.dump();
    EXPECT_EQ(calls["restart"], 0) << calls.dump();
  }
  // A cause still starts it: a changed unit.
  Result changed = apply(declare(failing("31"), "changed.toml"));
  EXPECT_EQ(changed.json()["summary"]["supervisor"]["restart"].get<int>() +
                changed.json()["summary"]["supervisor"]["start"].get<int>(),
            1)
      << changed.out;
}

// Item 5: one process removed and another of the same module added in one cycle
// share the default service name `<module>.service`: the old one is stopped and
// removed first, then the new one installed and started (it failed "the unit is
// not installed": pruning at the end removed the unit just installed). X- keys are
// accepted on both backends (X-LogMaxBytes is the builtin supervisor's log size).
TEST_P(ProcessLife, AServiceNameTakenOverInOneCycleIsStoppedThenInstalled) {
  ASSERT_EQ(apply(declare(text())).code, 0);
  const int oldPid = serviceStatus()["pid"].get<int>();
  std::string next = text();
  const std::string from = "[module." + module + ".process.runtime]";
  next.replace(next.find(from), from.size(), "[module." + module + ".process.worker]");
  const std::string unitKey = "Restart = \"always\"";
  next.replace(next.find(unitKey), unitKey.size(),
               unitKey + ", X-LogMaxBytes = \"65536\", X-Vendor-Note = \"renamed\"");
  Result r = apply(declare(next, "renamed.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = r.json();
  EXPECT_EQ(outcomeOf(j, id())["outcome"], "removed") << r.out;
  auto added = outcomeOf(j, module + ".worker");
  EXPECT_EQ(added["outcome"], "created") << added.dump();
  EXPECT_EQ(added.value("warning", ""), "") << "X- keys are no unsupported keys";
  Result st = mesh({"status", "--json"});
  const auto status = st.json();  // held: a range over a temporary's member dangles
  bool found = false;
  for (const auto& res : status["resources"])
    if (res["id"] == module + ".worker") {
      found = true;
      EXPECT_EQ(res["service"]["running"], true) << res.dump();
      EXPECT_NE(res["service"]["pid"], oldPid) << res.dump();
    }
  EXPECT_TRUE(found) << st.out;
  if (GetParam() == "builtin") {
    EXPECT_NE(::kill(oldPid, 0), 0) << "the old one still runs";
  }
}

// Item 5, as `plan` shows it: for that same change the plan says what apply then does —
// the old process removed (stopped), the new one created with its unit from nothing —
// through the cycle's one path (it showed the new one compared against the old one's
// unit: "would update … unit edited", a diff from the old unit). A reviewed plan of the
// change (`plan --out`, `apply --plan`) is applied, not refused as stale.
TEST_P(ProcessLife, APlanOfAServiceNameTakenOverShowsWhatApplyDoes) {
  ASSERT_EQ(apply(declare(text())).code, 0);
  std::string next = text();
  const std::string from = "[module." + module + ".process.runtime]";
  next.replace(next.find(from), from.size(), "[module." + module + ".process.worker]");
  const std::string decl = declare(next, "renamed.toml");
  const std::string worker = module + ".worker";

  Result planned = plan(decl, /*json=*/true);
  ASSERT_EQ(planned.code, 3) << planned.out << planned.err;
  const auto pj = planned.json();
  auto gone = outcomeOf(pj, id());
  EXPECT_EQ(gone["outcome"], "removed") << gone.dump();
  EXPECT_EQ(gone["detail"], "would stop and remove " + service()) << gone.dump();
  auto added = outcomeOf(pj, worker);
  EXPECT_EQ(added["outcome"], "created") << added.dump();
  EXPECT_EQ(added["would"], "start") << added.dump();
  EXPECT_NE(added["detail"].get<std::string>().find("running as " + service()), std::string::npos)
      << added.dump();
  // The unit's diff is from nothing: every line added, none of the old unit's removed.
  const std::string diff = added["diff"];
  EXPECT_NE(diff.find("--- /dev/null"), std::string::npos) << diff;

  Result shown = plan(decl);
  EXPECT_NE(shown.out.find("would remove " + id()), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("would create " + worker), std::string::npos) << shown.out;
  EXPECT_EQ(shown.out.find("would update"), std::string::npos) << shown.out;

  const std::string planPath = work + "/renamed.plan";
  Result out = mesh({"plan", decl, "--out", planPath});
  ASSERT_EQ(out.code, 3) << out.out << out.err;
  Result applied = mesh({"apply", "--plan", planPath, "--json"});
  ASSERT_EQ(applied.code, 0) << applied.out << applied.err;
  // Apply reports what the plan said, resource by resource, in the plan's order.
  const auto aj = applied.json();
  ASSERT_EQ(aj["outcomes"].size(), pj["outcomes"].size()) << applied.out;
  for (size_t i = 0; i < pj["outcomes"].size(); ++i) {
    const auto& p = pj["outcomes"][i];
    const auto& a = aj["outcomes"][i];
    EXPECT_EQ(a["id"], p["id"]) << applied.out;
    EXPECT_EQ(a["outcome"], p["outcome"]) << "planned " << p.dump() << "\napplied " << a.dump();
    EXPECT_EQ(a["reason"], p["reason"]) << "planned " << p.dump() << "\napplied " << a.dump();
  }
  EXPECT_EQ(outcomeOf(aj, id())["detail"], "stopped and removed " + service());
}

INSTANTIATE_TEST_SUITE_P(Backends, ProcessLife, ::testing::Values("builtin", "systemd"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mesh::e2e
