// The fixture of the `service` kind's tests: a real systemd booted in a namespace
// (tests/systemd/sdns.sh) and units installed there "as the vendor's" — in
// systemd's unit search path, outside mesh-host's --unit-dir, loaded by a
// daemon-reload as a package's postinst would. Each test's units are its own
// (vendor<N>.service), stopped, disabled and removed after it with whatever
// drop-in mesh-host left.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness.hh"
#include "systemd_env.hh"

namespace mesh::e2e {

// A service that says when it is reloaded (SIGHUP) and prints its greeting. No
// start limit: the kill sweeps restart it dozens of times a second.
constexpr const char* kVendorUnit = R"([Unit]
Description=a vendor's service (test)
StartLimitIntervalSec=0

[Service]
ExecStart=/bin/sh -c 'echo "greeting: $GREETING"; trap "echo reloaded" HUP; while :; do sleep 1 & wait; done'
ExecReload=/bin/kill -HUP $MAINPID

[Install]
WantedBy=multi-user.target
)";

class ServiceKind : public Node {
 protected:
  void SetUp() override {
    Node::SetUp();
    if (!SystemdNamespace::available(&skipWhy)) GTEST_SKIP() << skipWhy;
    auto& ns = SystemdNamespace::instance();
    extraArgs = {"--supervisor", "systemd", "--unit-dir", ns.unitDir()};
    extraEnv = {{"DBUS_SYSTEM_BUS_ADDRESS", ns.busAddress()},
                {"MESH_HOST_JOURNAL_DIR", ns.journalDir()}};
    unit = addVendorUnit();
    vendorFile = vendorFileOf(unit);
  }

  void TearDown() override {
    if (!IsSkipped()) {
      auto& ns = SystemdNamespace::instance();
      for (const auto& u : units_) {
        ns.ctl({"stop", u});
        ns.ctl({"disable", u});
        std::filesystem::remove(vendorFileOf(u));
        std::filesystem::remove_all(ns.unitDir() + "/" + u + ".d");
      }
    }
    Node::TearDown();
  }

  // Another unit "as the vendor's", loaded by a daemon-reload; its name.
  std::string addVendorUnit() {
    const std::string name = fmt::format("vendor{}.service", ++counter());
    units_.push_back(name);
    std::ofstream(vendorFileOf(name)) << kVendorUnit;
    EXPECT_EQ(SystemdNamespace::instance().ctl({"daemon-reload"}).code, 0);
    return name;
  }
  static std::string vendorFileOf(const std::string& u) {
    return SystemdNamespace::instance().vendorDir() + "/" + u;
  }

  std::string ctlOut(const std::vector<std::string>& args) {
    auto out = SystemdNamespace::instance().ctl(args).out;
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
  }
  std::string active(const std::string& u) { return ctlOut({"is-active", u}); }
  std::string enabled(const std::string& u) { return ctlOut({"is-enabled", u}); }
  std::string mainPid(const std::string& u) {
    return ctlOut({"show", "-p", "MainPID", "--value", u});
  }
  std::string dropinPath(const std::string& u) const {
    return SystemdNamespace::instance().unitDir() + "/" + u + ".d/50-mesh-host.conf";
  }
  std::string active() { return active(unit); }
  std::string enabled() { return enabled(unit); }
  std::string mainPid() { return mainPid(unit); }
  std::string dropinPath() const { return dropinPath(unit); }

  // A config the service restarts on, a site it reloads on, and the service of
  // `serviceUnit` (default: the test's first unit) with `keys`.
  std::string text(const std::string& config, const std::string& keys,
                   const std::string& serviceUnit = "") const {
    return fmt::format(R"(
[module.web.file.config]
path = "/etc/web/config"
content = "{}"

[module.web.file.site]
path = "/etc/web/site"
content = "site"

[module.web.service.vendor]
unit = "{}"
restart-on = ["web.config"]
reload-on = ["web.site"]
{}
)",
                       config, serviceUnit.empty() ? unit : serviceUnit, keys);
  }

  std::string emptyDeclaration() {
    return declare("node = \"test\"\nempty = true\n", "empty.toml");
  }

  static int& counter() {
    static int n = 0;
    return n;
  }

  std::string unit, vendorFile, skipWhy;

 private:
  std::vector<std::string> units_;
};

}  // namespace mesh::e2e
