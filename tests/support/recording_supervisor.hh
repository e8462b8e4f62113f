// A supervisor backend for tests that run the real apply code in-process: the
// service manager of a simulated machine (ServiceWorld), which outlives every
// cycle (and a crash of one), and a Supervisor (RecordingSupervisor) that acts on
// it and records what was asked of it. The fault simulation (tests/sim/sim.cc)
// and the per-kind unit tests (tests/unit/apply/kinds/) use it through the
// test-only Settings::makeSupervisor. Library mesh_test_supervisor.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "supervise/supervisor.hh"

namespace mesh::test {

// The simulated machine's services. Each start is stamped with a logical tick and
// a wall time in a later millisecond than any restart owed before it (as a real
// start takes time).
struct ServiceWorld {
  struct Service {
    bool installed = false, active = false;
    std::string text;
    int64_t sinceUs = 0;
    uint64_t startTick = 0;
    uint64_t reloadTick = 0;  // of the last reload (the pid stays)
    int pid = 0;
    // A unit mesh-host did not install (the `service` kind): the vendor's, found
    // installed; started at boot only when enabled. Its drop-in, when it has one.
    bool vendor = false, enabled = false;
    std::optional<std::string> dropin;
  };
  std::map<std::string, Service> services;
  std::map<std::string, uint64_t> installTick;  // last change of the unit text
  struct Restart {
    std::string service;
    uint64_t prevStart = 0, tick = 0;
  };
  std::vector<Restart> restarts;  // of the cycle in hand
  std::vector<Restart> reloads;   // of the cycle in hand (prevStart: the start it kept)
  uint64_t tick = 0;
  int pids = 100;
  int failNext = 0;  // the next N starts/restarts fail
  // The Nth start, restart, stop or observe from now hangs: the backend gives
  // up after its timeout and throws; the job may still run to its end behind
  // the caller's back (hangDone). 0: none.
  int hangAt = 0;
  bool hangDone = false;
  // Calls that change something: install, uninstall, start, restart, stop, reload.
  int64_t calls = 0;

  bool hangsNow() { return hangAt > 0 && --hangAt == 0; }
  void startNow(Service& s);
};

class RecordingSupervisor : public supervise::Supervisor {
 public:
  explicit RecordingSupervisor(ServiceWorld& w) : w_(w) {}
  std::string name() const override { return "sim"; }
  std::map<std::string, supervise::ServiceState> observe(const std::vector<std::string>& names,
                                                         bool) override;
  void install(const supervise::Unit& unit) override;
  void uninstall(const std::string& name) override;
  void start(const std::string& name) override;
  void restart(const std::string& name) override;
  void stop(const std::string& name) override;
  void reloadService(const std::string& name) override;
  std::vector<std::string> unsupportedKeys(const supervise::Unit&) const override { return {}; }
  bool drivesForeignUnits() const override { return true; }
  supervise::ForeignUnit observeForeign(const std::string& name) override;
  // A drop-in changed is a unit changed: it stamps installTick.
  void setDropin(const std::string& name, const std::optional<std::string>& text) override;
  void setEnabled(const std::string& name, const supervise::ForeignUnit&, bool enabled) override;

 private:
  ServiceWorld::Service& running(const std::string& name);
  ServiceWorld& w_;
};

}  // namespace mesh::test
