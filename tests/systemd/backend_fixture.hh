// A gtest fixture for the systemd backend against the binary's namespace systemd:
// a fresh backend per test, distinct service names per test, and units in the
// shape mesh-host renders them.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "namespace.hh"
#include "supervise/supervisor.hh"

namespace mesh::testing {

// Unit text as mesh-host renders it (src/apply/kinds/unit_text.cc): a header
// comment, [Unit] Description, the [Service] keys sorted, [Install] WantedBy.
inline std::string renderTestUnit(const std::string& id,
                                  const std::map<std::string, std::string>& service) {
  std::string s = "# Managed by mesh-host (" + id + "); edits are drift and will be reverted.\n";
  s += "[Unit]\nDescription=mesh-host process " + id + "\n\n[Service]\n";
  for (const auto& [k, v] : service) s += k + "=" + v + "\n";
  return s + "\n[Install]\nWantedBy=multi-user.target\n";
}

class SystemdBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto why = SystemdNamespace::unavailableReason();
    if (!why.empty()) GTEST_SKIP() << why;
    ns = &SystemdNamespace::shared();
    sup = supervise::openSystemd(options());
  }

  void TearDown() override {
    if (!ns) return;
    for (const auto& n : used) ns->ctl("stop " + shellQuote(n), false);
  }

  supervise::Options options() const {
    supervise::Options o;
    o.unitDir = ns->unitDir();
    o.busAddress = ns->busAddress();
    o.journalDir = ns->journalDir();
    return o;
  }

  // "mesh-t-<TestName>-<tag>.service": distinct per test, so tests never share a unit.
  std::string service(const std::string& tag = "a") {
    std::string n = std::string("mesh-t-") +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name() + "-" + tag +
                    ".service";
    used.push_back(n);
    return n;
  }

  static supervise::Unit unit(const std::string& name,
                              std::map<std::string, std::string> service = {}) {
    if (!service.count("ExecStart")) service["ExecStart"] = "/bin/sleep infinity";
    supervise::Unit u;
    u.name = name;
    u.text = renderTestUnit("test." + name.substr(0, name.find('.')), service);
    for (const auto& [k, v] : service) u.service[k] = {v};
    return u;
  }

  supervise::ServiceState observe1(const std::string& name, bool detailed = true) {
    return sup->observe({name}, detailed).at(name);
  }

  SystemdNamespace* ns = nullptr;
  std::unique_ptr<supervise::Supervisor> sup;
  std::vector<std::string> used;
};

}  // namespace mesh::testing
