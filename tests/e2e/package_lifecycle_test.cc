// The package's life on a node that systemd runs: install, upgrade, remove, purge,
// each by dpkg with the maintainer scripts for real, inside a systemd booted as PID 1
// of a private namespace (tests/systemd/sdns.sh with SDNS_OVERLAY=1: /usr, /etc and
// /var there are private overlays of this machine's, so dpkg installs as on a node
// while the host stays untouched). The agent manages one real service, from a bundle
// whose bin/svc sleeps: no package operation may restart it, removal leaves it
// running, and the state goes only when the purge asks for it and nothing uses it.
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>

#include "package_fixture.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kAgent = "mesh-host.service";
constexpr const char* kService = "pkgtest.service";  // module pkgtest's process
constexpr const char* kState = "/var/lib/mesh-host";

class PackageLifecycle : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = packagingUnavailable();
    if (why.empty() && ::geteuid() != 0) why = "booting a namespace systemd needs root";
    if (why.empty() && (!fs::exists("/lib/systemd/systemd") || !have("unshare")))
      why = "systemd or unshare is not installed (scripts/install-deps installs them)";
    if (!why.empty()) GTEST_SKIP() << why;
    v1 = debOf(MESH_VERSION, &why);
    ASSERT_FALSE(v1.empty()) << why;
    v2 = debOf(upgradeVersion(), &why);
    ASSERT_FALSE(v2.empty()) << why;

    char tmpl[] = "/tmp/mesh-pkglife.XXXXXX";
    work = ::mkdtemp(tmpl);
    ns = work + "/ns";
    Result boot =
        runCommand({"bash", SDNS_SCRIPT, "start", ns},
                   {{"SDNS_OVERLAY", "1"}, {"SDNS_OWNER_PID", std::to_string(::getpid())}});
    ASSERT_EQ(boot.code, 0) << "cannot boot a namespace systemd: " << boot.out << boot.err;
    booted = true;
    // A node has no policy-rc.d; a container image often has one that forbids every
    // start (exit 101), which deb-systemd-invoke obeys. Gone from the overlay only.
    Result policy = in({"rm", "-f", "/usr/sbin/policy-rc.d"});
    ASSERT_EQ(policy.code, 0) << policy.out << policy.err;
  }
  void TearDown() override {
    if (booted) {
      Result stop = runCommand({"bash", SDNS_SCRIPT, "stop", ns});
      EXPECT_EQ(stop.code, 0) << stop.out << stop.err;
    }
    if (!work.empty() && !std::getenv("MESH_KEEP_TEST_DIRS")) fs::remove_all(work);
  }

  static std::string upgradeVersion() { return std::string(MESH_VERSION) + ".1"; }

  // A command inside the namespace (its mounts: the overlays; its systemd).
  Result in(const std::vector<std::string>& argv,
            const std::map<std::string, std::string>& env = {}) const {
    std::vector<std::string> all = {"bash", SDNS_SCRIPT, "exec", ns};
    all.insert(all.end(), argv.begin(), argv.end());
    return runCommand(all, env);
  }
  bool existsInside(const std::string& path) const { return in({"test", "-e", path}).code == 0; }
  std::string property(const std::string& unit, const std::string& name) const {
    return firstLine(in({"systemctl", "show", "-p", name, "--value", unit}).out);
  }
  std::string activeState(const std::string& unit) const { return property(unit, "ActiveState"); }
  std::string mainPid(const std::string& unit) const { return property(unit, "MainPID"); }
  std::string installedVersion() const {
    return in({"dpkg-query", "-W", "-f", "${Status} ${Version}", "mesh-host"}).out;
  }
  // Polls `done` until it holds or `within` passes; true when it held.
  static bool await(const std::function<bool()>& done, milliseconds within) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return true;
  }
  // Writes the node's declaration as a deploy tool would: a rename over the file.
  void declare(const std::string& toml) {
    const std::string file = work + "/declaration.toml";
    std::ofstream(file) << toml;
    Result r = in({"sh", "-c",
                   "cp \"$1\" /etc/mesh-host/.declaration.new && "
                   "mv -f /etc/mesh-host/.declaration.new /etc/mesh-host/declaration.toml",
                   "_", file});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
  }
  // A bundle whose bin/svc sleeps, published into the agent's default blob store
  // with the installed binary; returns its digest.
  std::string publishSleeper() {
    const std::string tree = work + "/bundle";
    fs::create_directories(tree + "/bin");
    std::ofstream(tree + "/bin/svc") << "#!/bin/sh\nexec sleep infinity\n";
    fs::permissions(tree + "/bin/svc", fs::perms(0755));
    EXPECT_EQ(runCommand({"tar", "-C", tree, "-cf", work + "/bundle.tar", "bin"}).code, 0);
    Result r = in({"/usr/bin/mesh-host", "blob", "add", work + "/bundle.tar", "--to",
                   std::string(kState) + "/blobs"});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    return firstLine(r.out);
  }
  Result dpkg(const std::vector<std::string>& args,
              const std::map<std::string, std::string>& env = {}) const {
    std::vector<std::string> argv = {"dpkg"};
    argv.insert(argv.end(), args.begin(), args.end());
    return in(argv, env);
  }

  std::string v1, v2, work, ns;
  bool booted = false;
};

TEST_F(PackageLifecycle, InstallUpgradeRemovePurgeNeverRestartAManagedService) {
  // Install: the agent is enabled and running (READY=1: its first cycle is done).
  Result r = dpkg({"-i", v1});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(installedVersion(), "install ok installed " MESH_VERSION);
  EXPECT_EQ(firstLine(in({"systemctl", "is-enabled", kAgent}).out), "enabled");
  EXPECT_TRUE(existsInside("/etc/systemd/system/multi-user.target.wants/mesh-host.service"));
  ASSERT_EQ(activeState(kAgent), "active") << in({"journalctl", "--no-pager", "-u", kAgent}).out;

  // It converges the node to a declaration that starts a service.
  const std::string bundle = publishSleeper();
  ASSERT_EQ(bundle.rfind("sha256:", 0), 0u) << bundle;
  declare(fmt::format(R"([module.pkgtest.process.svc]
bundle = "{}"
unit = {{ ExecStart = "{{bundle}}/bin/svc", Restart = "always" }}
)",
                      bundle));
  ASSERT_TRUE(await([&] { return activeState(kService) == "active"; }, seconds(60)))
      << in({"journalctl", "--no-pager", "-u", kAgent}).out;
  const std::string service = mainPid(kService);
  ASSERT_NE(service, "0");
  const std::string serviceSince = property(kService, "ActiveEnterTimestampMonotonic");

  // An operator's edit of the conffile survives the upgrade.
  ASSERT_EQ(in({"sh", "-c", "echo '# edited on this node' >> /etc/default/mesh-host"}).code, 0);

  // Upgrade: the agent restarts (a new pid, active again), the service does not.
  const std::string agentBefore = mainPid(kAgent);
  r = dpkg({"-i", v2});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(installedVersion(), "install ok installed " + upgradeVersion());
  EXPECT_EQ(activeState(kAgent), "active");
  EXPECT_NE(mainPid(kAgent), agentBefore) << "the upgrade did not restart the agent";
  EXPECT_NE(mainPid(kAgent), "0");
  EXPECT_EQ(mainPid(kService), service) << "the upgrade restarted the managed service";
  EXPECT_EQ(property(kService, "ActiveEnterTimestampMonotonic"), serviceSince);
  EXPECT_EQ(property(kService, "NRestarts"), "0");
  EXPECT_NE(in({"cat", "/etc/default/mesh-host"}).out.find("# edited on this node"),
            std::string::npos);
  EXPECT_FALSE(existsInside("/etc/default/mesh-host.dpkg-dist"));

  // Remove: the agent stops, its files go, the service keeps running; the state and
  // the conffile stay.
  r = dpkg({"-r", "mesh-host"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(activeState(kAgent), "active");
  EXPECT_FALSE(existsInside("/usr/bin/mesh-host"));
  EXPECT_EQ(activeState(kService), "active");
  EXPECT_EQ(mainPid(kService), service) << "removing the package restarted the managed service";
  EXPECT_TRUE(existsInside(std::string(kState) + "/state.db"));
  EXPECT_TRUE(existsInside("/etc/default/mesh-host"));

  // Purge without asking: the conffile and the enablement go, the state stays.
  r = dpkg({"--purge", "mesh-host"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("kept its state"), std::string::npos) << r.out;
  EXPECT_FALSE(existsInside("/etc/default/mesh-host"));
  EXPECT_FALSE(existsInside("/etc/systemd/system/multi-user.target.wants/mesh-host.service"));
  EXPECT_TRUE(existsInside(std::string(kState) + "/state.db"));
  EXPECT_EQ(mainPid(kService), service);

  // Reinstalled, the agent finds its record and the service as declared: not restarted.
  r = dpkg({"-i", v2});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(activeState(kAgent), "active");
  EXPECT_EQ(mainPid(kService), service) << "reinstalling restarted the managed service";

  // Asked to purge the state while a service still runs from it: kept, and said why.
  r = dpkg({"--purge", "mesh-host"}, {{"MESH_HOST_PURGE_STATE", "1"}});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("services still use it"), std::string::npos) << r.out;
  EXPECT_TRUE(existsInside(std::string(kState) + "/state.db"));
  EXPECT_EQ(mainPid(kService), service);

  // Decommissioning: reinstall, declare nothing (empty = true) — the agent stops and
  // removes the service — then purge the state with the package.
  r = dpkg({"-i", v2});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  declare("empty = true\n");
  ASSERT_TRUE(await([&] { return !existsInside("/etc/systemd/system/" + std::string(kService)); },
                    seconds(60)))
      << in({"journalctl", "--no-pager", "-u", kAgent}).out;
  EXPECT_TRUE(await([&] { return activeState(kService) != "active"; }, seconds(30)));
  r = dpkg({"--purge", "mesh-host"}, {{"MESH_HOST_PURGE_STATE", "1"}});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("removed its state"), std::string::npos) << r.out;
  EXPECT_FALSE(existsInside(kState));
  EXPECT_FALSE(existsInside("/usr/bin/mesh-host"));
  EXPECT_EQ(in({"dpkg-query", "-W", "-f", "${Status}", "mesh-host"}).out.find("installed"),
            std::string::npos);
}

}  // namespace
}  // namespace mesh::e2e
