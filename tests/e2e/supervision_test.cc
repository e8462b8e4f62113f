// The builtin supervisor when things go wrong around it, end to end: the real
// mesh-host and mesh-host-supervise against a temp root. A service that dies
// right after its restart, a disk too full to record a restart, a supervisor
// killed with -9, a state directory deleted under running services.
//
// Every process a test starts carries MESH_TEST_TAG=<tag> in its environment
// (mesh-host and the supervisors it spawns inherit it; the service gets it
// through its unit), and TearDown kills every process carrying it.
#include <fmt/format.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// /proc/<pid>/environ holds `entry` exactly.
bool environHas(const std::string& pid, const std::string& entry) {
  const std::string env = slurp("/proc/" + pid + "/environ");
  size_t start = 0;
  while (start < env.size()) {
    size_t end = env.find('\0', start);
    if (end == std::string::npos) end = env.size();
    if (env.compare(start, end - start, entry) == 0) return true;
    start = end + 1;
  }
  return false;
}

bool alive(int pid) {
  if (pid <= 0) return false;
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z' &&
         stat[close + 2] != 'X';
}

// Waits up to `timeout` for `ok()`.
template <typename F>
bool eventually(F ok, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (ok()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
}

class Supervision : public Node {
 protected:
  void SetUp() override {
    Node::SetUp();
    tag = "mesh-supervision-" + std::to_string(::getpid()) + "-" + std::to_string(++counter());
    extraArgs = {"--supervisor", "builtin"};
    extraEnv = {{"MESH_TEST_TAG", tag}};
    // Reads its config; "broken" makes it exit with status 3 at once, forking
    // nothing: gone within a millisecond or two of its exec.
    bundle = publish(makeArchive({{"bin/svc",
                                   "#!/bin/sh\n"
                                   "read -r cfg < \"$MESH_CONFIG\"\n"
                                   "[ \"$cfg\" = broken ] && exit 3\n"
                                   "echo \"svc up: $cfg\"\n"
                                   "exec sleep 100000\n"}},
                                 "chmod 755 bin/svc && tar -cf out bin"));
  }

  void TearDown() override {
    killTagged();
    if (!mountPoint.empty()) ::umount2(mountPoint.c_str(), MNT_DETACH);
    Node::TearDown();
  }

  // Every process of this test: supervisors first (else they restart the
  // services), until none is left.
  void killTagged() {
    for (int round = 0; round < 50; ++round) {
      auto sups = tagged(true), svcs = tagged(false);
      if (sups.empty() && svcs.empty()) return;
      for (int pid : sups) ::kill(pid, SIGKILL);
      for (int pid : svcs) ::kill(pid, SIGKILL);
      std::this_thread::sleep_for(20ms);
    }
    ADD_FAILURE() << "processes tagged " << tag << " survive SIGKILL";
  }

  // Live processes carrying the tag: the supervisors, or everything else (the
  // service's processes).
  std::set<int> tagged(bool supervisors) const {
    std::set<int> out;
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string pid = e.path().filename();
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      if (!environHas(pid, "MESH_TEST_TAG=" + tag) || !alive(std::stoi(pid))) continue;
      const bool isSupervisor =
          slurp("/proc/" + pid + "/cmdline").find("mesh-host-supervise") != std::string::npos;
      if (isSupervisor == supervisors) out.insert(std::stoi(pid));
    }
    return out;
  }
  std::set<int> servicePids() const { return tagged(false); }
  std::set<int> supervisorPids() const { return tagged(true); }

  std::string text(const std::string& config = "one") const {
    return fmt::format(R"(
[module.m.file.config]
path = "/etc/m/config"
content = "{0}"

[module.m.process.runtime]
bundle = "{1}"
restart-on = ["m.config"]
unit = {{ ExecStart = "{{bundle}}/bin/svc", Restart = "always", Environment = ["MESH_CONFIG={{root}}/etc/m/config", "MESH_TEST_TAG={2}"] }}
)",
                       config, bundle, tag);
  }
  std::string applyText(const std::string& config, Result* out = nullptr) {
    Result r = apply(declare(text(config)));
    if (out) *out = r;
    return r.out + r.err;
  }

  static constexpr const char* kId = "m.runtime";
  static constexpr const char* kService = "m.service";

  // The service as `status --json` shows it.
  nlohmann::json serviceStatus(int* code = nullptr) {
    Result st = mesh({"status", "--json"});
    if (code) *code = st.code;
    const auto j = st.json();
    for (const auto& r : j["resources"])
      if (r["id"] == kId) return r["service"];
    ADD_FAILURE() << "no status for " << kId << ": " << st.out << st.err;
    return nlohmann::json::object();
  }
  int runningPid() { return serviceStatus().value("pid", 0); }

  // <state-dir>/services/m.service/status: a link to the runtime directory's.
  nlohmann::json statusFile() {
    auto j = nlohmann::json::parse(slurp(stateDir() + "/services/" + kService + "/status"), nullptr,
                                   false);
    return j.is_discarded() ? nlohmann::json::object() : j;
  }

  static int& counter() {
    static int n = 0;
    return n;
  }

  std::string tag, bundle, mountPoint;
};

// The service dies right after a restart (its new config is broken): the
// restart fails with the reason, status shows it down rather than a dead pid
// as active, Restart= keeps trying, and fixing the config brings it back at
// once.
TEST_F(Supervision, AServiceThatDiesRightAfterARestartIsSeenDying) {
  Result r;
  applyText("one", &r);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const int first = runningPid();
  ASSERT_TRUE(alive(first));

  applyText("broken", &r);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto o = outcomeOf(r.json(), kId);
  EXPECT_EQ(o["outcome"], "failed") << o.dump();
  EXPECT_NE(o.dump().find("restart of m.service failed: exited with status 3"), std::string::npos)
      << o.dump();

  int code = 0;
  auto s = serviceStatus(&code);
  // Held in its supervisor's back-off, as systemd shows auto-restart: active (its
  // supervisor will start it again), not running, and status fails. Restart= may just
  // have started its next run (which dies in turn): then it is starting, a new pid, and
  // still not running — never the dead pid as active.
  EXPECT_FALSE(s.value("running", true)) << s.dump();
  EXPECT_TRUE(s.value("active", false)) << s.dump();
  const std::string state = s.value("state", "");
  if (state == "activating")
    EXPECT_NE(s.value("pid", 0), first) << s.dump();
  else {
    EXPECT_EQ(state, "activating (auto-restart)") << s.dump();
    EXPECT_EQ(s.value("pid", -1), 0) << s.dump();
  }
  EXPECT_EQ(code, 1) << s.dump();
  EXPECT_FALSE(alive(first));
  // Restart=always runs: crash after crash.
  EXPECT_TRUE(eventually([&] { return serviceStatus().value("restarts_by_crash", 0) >= 2; }))
      << serviceStatus().dump();

  const auto t0 = std::chrono::steady_clock::now();
  applyText("two", &r);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  s = serviceStatus();
  EXPECT_TRUE(s.value("active", false)) << s.dump();
  EXPECT_TRUE(alive(s.value("pid", 0)));
  EXPECT_EQ(servicePids().size(), 1u);
}

// A restart on a full disk. The tmpfs is mounted over <state-dir>/services,
// which holds the supervisor's records in the old layout, and holds the runtime
// directory here (MESH_HOST_RUNTIME_DIR), so the status cannot be written in
// either. The restart happens, the supervisor says it could not record it, the
// cycle reports that failure — and the next cycles do not restart again: they
// see the restart was made (from the supervisor's memory), so the owed restart
// is paid.
TEST_F(Supervision, ARestartThatCannotBeRecordedFailsAndIsNotRepeated) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  const std::string services = stateDir() + "/services";
  fs::create_directories(services);
  if (::mount("tmpfs", services.c_str(), "tmpfs", 0, "size=256k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs: " << std::strerror(errno);
  mountPoint = services;
  extraEnv["MESH_HOST_RUNTIME_DIR"] = services + "/.run";

  Result r;
  applyText("one", &r);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const int first = runningPid();
  ASSERT_TRUE(alive(first));
  Result dd = runCommand({"sh", "-c", "dd if=/dev/zero of='" + services + "/filler' bs=4k"});
  ASSERT_NE(dd.err.find("No space left on device"), std::string::npos) << dd.err;

  applyText("two", &r);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "m.config")["outcome"], "updated");
  auto o = outcomeOf(r.json(), kId);
  EXPECT_EQ(o["outcome"], "failed") << o.dump();
  const std::string detail = o.dump();
  EXPECT_NE(detail.find("restart of m.service failed"), std::string::npos) << detail;
  EXPECT_NE(detail.find("cannot record the status in " + services + "/.run/m.service/status"),
            std::string::npos)
      << detail;
  EXPECT_NE(detail.find("No space left on device (errno 28)"), std::string::npos) << detail;

  // It did restart, once: one copy, the new one, and status sees it.
  auto s = serviceStatus();
  const int second = s.value("pid", 0);
  EXPECT_TRUE(s.value("active", false)) << s.dump();
  EXPECT_NE(second, first);
  EXPECT_TRUE(alive(second));
  EXPECT_FALSE(alive(first));
  EXPECT_EQ(servicePids(), std::set<int>{second});

  // The next cycle, disk still full: the owed restart was paid.
  applyText("two", &r);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  o = outcomeOf(r.json(), kId);
  EXPECT_EQ(o["outcome"], "unchanged") << o.dump();
  EXPECT_EQ(o["restarted"], false) << o.dump();
  EXPECT_EQ(runningPid(), second);

  // Room again: the supervisor records it by itself, and nothing restarts.
  fs::remove(services + "/filler");
  EXPECT_TRUE(eventually([&] { return statusFile().value("pid", 0) == second; }, 5s))
      << statusFile().dump();
  applyText("two", &r);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), kId)["outcome"], "unchanged");
  EXPECT_EQ(runningPid(), second);
  EXPECT_EQ(servicePids(), std::set<int>{second});
}

// A supervisor killed with -9: the next cycle gives the orphan a new
// supervisor — the same pid, no restart — status says so, and Restart= works
// again.
TEST_F(Supervision, AKilledSupervisorIsReplacedWithoutARestart) {
  Result r;
  applyText("one", &r);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const int pid = runningPid();
  ASSERT_GT(pid, 0);
  const auto supervisors = supervisorPids();
  ASSERT_EQ(supervisors.size(), 1u);
  ASSERT_EQ(::kill(*supervisors.begin(), SIGKILL), 0);
  ASSERT_TRUE(eventually([&] { return supervisorPids().empty(); }));
  EXPECT_EQ(serviceStatus().value("state", ""), "active (unsupervised)");

  applyText("one", &r);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto o = outcomeOf(r.json(), kId);
  EXPECT_EQ(o["restarted"], false) << o.dump();
  EXPECT_EQ(o["outcome"], "unchanged") << o.dump();
  auto calls = r.json()["summary"]["supervisor"];
  EXPECT_EQ(calls["start"], 0) << calls.dump();
  EXPECT_EQ(calls["restart"], 0) << calls.dump();

  auto s = serviceStatus();
  EXPECT_EQ(s.value("pid", 0), pid);
  EXPECT_EQ(s.value("state", ""), fmt::format("active (supervisor was gone; adopted pid {})", pid))
      << s.dump();
  const auto adopter = supervisorPids();
  ASSERT_EQ(adopter.size(), 1u);
  EXPECT_NE(*adopter.begin(), *supervisors.begin());
  EXPECT_EQ(statusFile().value("supervisor_pid", 0), *adopter.begin());
  EXPECT_EQ(servicePids(), std::set<int>{pid});

  // Restart= is enforced again.
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  EXPECT_TRUE(eventually([&] {
    auto now = serviceStatus();
    return now.value("active", false) && now.value("pid", 0) != pid && alive(now.value("pid", 0));
  })) << serviceStatus().dump();
  EXPECT_EQ(serviceStatus().value("restarts_by_crash", 0), 1);
  EXPECT_EQ(supervisorPids(), adopter);
  // And the next cycle has nothing to do.
  applyText("one", &r);
  EXPECT_EQ(outcomeOf(r.json(), kId)["outcome"], "unchanged");
}

// The whole state directory deleted while the service runs (its supervisor's
// runtime records are in <root>/run/mesh-host, the default for this state
// directory): the next cycle finds the running service and never starts a
// second copy.
TEST_F(Supervision, ADeletedStateDirectoryNeverStartsASecondCopy) {
  Result r;
  applyText("one", &r);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const int pid = runningPid();
  const auto supervisors = supervisorPids();
  ASSERT_EQ(supervisors.size(), 1u);
  EXPECT_TRUE(fs::exists(root + "/run/mesh-host/" + kService + "/supervisor.lock"));
  fs::remove_all(stateDir());

  applyText("one", &r);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  // One copy, under the same supervisor. (Its bundle and unit were deleted with
  // the state directory and are put back, which restarts it, as with systemd.)
  EXPECT_EQ(servicePids().size(), 1u) << r.out;
  EXPECT_EQ(supervisorPids(), supervisors);
  const int now = runningPid();
  EXPECT_TRUE(alive(now));
  EXPECT_EQ(servicePids(), std::set<int>{now});
  if (now != pid) {
    EXPECT_FALSE(alive(pid));
  }

  applyText("one", &r);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), kId)["outcome"], "unchanged");
  EXPECT_EQ(runningPid(), now);
  EXPECT_EQ(servicePids(), std::set<int>{now});
  EXPECT_EQ(supervisorPids(), supervisors);
}

// Both: the supervisor killed and the state directory deleted. The orphan is
// still found through the runtime directory and adopted; one copy.
TEST_F(Supervision, ADeletedStateDirectoryAndAKilledSupervisorStillOneCopy) {
  Result r;
  applyText("one", &r);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto supervisors = supervisorPids();
  ASSERT_EQ(supervisors.size(), 1u);
  ASSERT_EQ(::kill(*supervisors.begin(), SIGKILL), 0);
  ASSERT_TRUE(eventually([&] { return supervisorPids().empty(); }));
  fs::remove_all(stateDir());

  applyText("one", &r);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(servicePids().size(), 1u) << r.out;
  EXPECT_EQ(supervisorPids().size(), 1u);
  EXPECT_EQ(servicePids(), std::set<int>{runningPid()});
  applyText("one", &r);
  EXPECT_EQ(outcomeOf(r.json(), kId)["outcome"], "unchanged");
  EXPECT_EQ(servicePids().size(), 1u);
}

}  // namespace
}  // namespace mesh::e2e
