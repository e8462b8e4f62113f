// A typed client for systemd's manager (org.freedesktop.systemd1) over one sd-bus
// connection: listing units by name, daemon-reload, running a job (StartUnit, …)
// to its end, and reading unit properties. It knows nothing of unit files or of
// mesh-host's reload policy; the backend (systemd.cc) adds those.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "supervise/systemd/bus.hh"

namespace mesh::supervise::sdbus {

// One row of Manager.ListUnitsByNames.
struct UnitListing {
  std::string name;
  std::string loadState;    // "loaded", "not-found", "bad-setting", "masked", …
  std::string activeState;  // "active", "inactive", "failed", "activating", …
  std::string subState;     // "running", "dead", "auto-restart", …
  std::string path;         // the unit's object path
};

class Manager {
 public:
  // address "" → sd_bus_open_system() (honours DBUS_SYSTEM_BUS_ADDRESS); else that
  // bus address, as a bus client (Hello). Proves the manager answers by reading its
  // Version. Throws InputError that says what to do when it cannot be reached.
  static std::unique_ptr<Manager> connect(const std::string& address);

  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  const std::string& version() const { return version_; }

  // One call for all names; units systemd does not know come back "not-found".
  std::vector<UnitListing> listUnitsByNames(const std::vector<std::string>& names);

  // Manager.Reload: systemd sends the reply only once the reload is complete, so
  // units are re-read when this returns.
  void reload();

  // Calls `method` ("StartUnit", "RestartUnit", "StopUnit") with mode "replace" and
  // waits for the JobRemoved signal of the job it returns; returns the job's result
  // ("done", "failed", "canceled", "timeout", "dependency", …). Throws BusError when
  // the call is refused (its message is systemd's) and Error on timeout.
  std::string runJob(const char* method, const std::string& unit,
                     std::chrono::milliseconds timeout);

  // Manager.KillUnit: sends `signal` to the unit's processes `whom` names ("main",
  // "control", "all"). No job: done when it returns. Throws BusError (systemd's
  // message) when refused, e.g. for a unit with no main process.
  void killUnit(const std::string& unit, const char* whom, int signal);

  // Manager.ResetFailedUnit: forgets the unit's failed state and its start-limit
  // count (systemctl reset-failed).
  void resetFailedUnit(const std::string& unit);

  // Manager.LoadUnit: the unit's object path (loads it when needed).
  std::string loadUnit(const std::string& unit);

  // Properties of the unit at `path`; iface "Unit" or "Service" (the
  // org.freedesktop.systemd1. prefix is added).
  std::string getString(const std::string& path, const char* iface, const char* prop);
  uint64_t getU64(const std::string& path, const char* iface, const char* prop);
  uint32_t getU32(const std::string& path, const char* iface, const char* prop);
  int32_t getI32(const std::string& path, const char* iface, const char* prop);
  bool getBool(const std::string& path, const char* iface, const char* prop);
  // A byte-array property ("ay") in lowercase hex, as the journal spells an id:
  // Unit.InvocationID → "3946886e165449aa9307e0685900f048" ("" when unset).
  std::string getHex(const std::string& path, const char* iface, const char* prop);

  // Processes incoming messages (signals) for `d`; used to let a just-started
  // service settle.
  void pump(std::chrono::milliseconds d);

 private:
  Manager() = default;
  void subscribe();
  static int onJobRemoved(sd_bus_message* m, void* self, sd_bus_error* error);
  // Dispatches what has arrived and waits at most until `deadline`; false once it passed.
  bool pumpUntil(std::chrono::steady_clock::time_point deadline);

  BusPtr bus_;
  SlotPtr jobRemovedSlot_;
  bool subscribed_ = false;
  std::string version_;
  // The job runJob waits for and, once its JobRemoved arrived, the result. Only
  // that job is recorded: other clients' job signals are dropped, not hoarded.
  std::string waitingJob_;
  std::string jobResult_;
};

}  // namespace mesh::supervise::sdbus
