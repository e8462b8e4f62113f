// A node with a real service: a bundle holding a small shell service, a
// credential and a config it restarts on. Parameterised by supervisor backend.
#pragma once

#include <fmt/format.h>

#include <fstream>

#include "harness.hh"
#include "systemd_env.hh"

namespace mesh::e2e {

class ProcessNode : public Node, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    Node::SetUp();
    module = fmt::format("p{}", ++counter());
    if (GetParam() == "systemd") {
      if (!SystemdNamespace::available(&skipWhy)) GTEST_SKIP() << skipWhy;
      auto& ns = SystemdNamespace::instance();
      extraArgs = {"--supervisor", "systemd", "--unit-dir", ns.unitDir()};
      extraEnv = {{"DBUS_SYSTEM_BUS_ADDRESS", ns.busAddress()},
                  {"MESH_HOST_JOURNAL_DIR", ns.journalDir()}};
    } else {
      extraArgs = {"--supervisor", "builtin"};
    }
    bundle = publish(makeArchive(
        {{"bin/svc", "#!/bin/sh\necho \"svc up: $(cat \"$MESH_CONFIG\")\"\nexec sleep 100000\n"}},
        "chmod 755 bin/svc && tar -cf out bin"));
    secretFile = work + "/secret";
    setSecret("first-secret");
  }

  void TearDown() override {
    if (!IsSkipped()) {
      // Prune everything: stops the service (and exercises removal). What this
      // cannot stop under the builtin supervisor is killed by Node::TearDown:
      // every process still using this test's root, the services of its
      // supervisors included.
      apply(declare("node = \"test\"\nempty = true\n", "empty.toml"));
      // A service the store no longer says mesh-host wrote (a test that lost the
      // store: adopted, so released, not removed) is still running: stop it.
      // Under systemd by its unit, since systemd would restart a killed one.
      if (GetParam() == "systemd") SystemdNamespace::instance().ctl({"stop", service()});
    }
    Node::TearDown();
  }

  void setSecret(const std::string& s) { std::ofstream(secretFile, std::ios::trunc) << s; }

  // `mesh-host apply decl` killed by strace (a real SIGKILL) at the Nth call of
  // `syscall`; true when it ran through (the Nth call never came). Only the
  // mesh-host process is traced, not the supervisors it starts.
  bool applyKilledAt(const std::string& syscall, int n, const std::string& decl) {
    std::vector<std::string> argv = {
        "strace",      "-qq",    "-o",
        "/dev/null",   "-e",     fmt::format("inject={}:signal=KILL:when={}", syscall, n),
        MESH_HOST_BIN, "apply",  decl,
        "--root",      root,     "--blobs",
        blobs,         "--node", "test"};
    argv.insert(argv.end(), extraArgs.begin(), extraArgs.end());
    return runCommand(argv, extraEnv).code == 0;
  }

  std::string text(const std::string& config = "one", const std::string& extraEnvVar = "") const {
    return fmt::format(R"(
[module.{0}.credential.key]
path = "/etc/{0}/key"
from = "{1}"

[module.{0}.file.config]
path = "/etc/{0}/config"
content = "{2}"

[module.{0}.process.runtime]
bundle = "{3}"
restart-on = ["{0}.key", "{0}.config"]
unit = {{ ExecStart = "{{bundle}}/bin/svc", Restart = "always", Environment = ["MESH_CONFIG={{root}}/etc/{0}/config"{4}] }}
)",
                       module, secretFile, config, bundle, extraEnvVar);
  }

  std::string id() const { return module + ".runtime"; }
  std::string service() const { return module + ".service"; }

  // The service as `status --json` shows it.
  nlohmann::json serviceStatus() {
    Result st = mesh({"status", "--json"});
    const auto j = st.json();
    for (const auto& r : j["resources"])
      if (r["id"] == id()) return r["service"];
    ADD_FAILURE() << "no status for " << id() << ": " << st.out << st.err;
    return {};
  }

  static int& counter() {
    static int n = 0;
    return n;
  }

  std::string module, bundle, secretFile, skipWhy;
};

}  // namespace mesh::e2e
