// What `status` needs to know of a process (or service) record without knowing its format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "state/store/records.hh"

namespace mesh::apply {

struct ProcessInfo {
  std::string service;
  int64_t restarts = 0;  // restarts mesh-host made
  // Restarts the supervisor made (Restart=) before mesh-host's last start or
  // restart; add the supervisor's current count for the total.
  int64_t crashRestartsBefore = 0;
  // Not running is down: false for a `service` declared stopped or left as it is.
  bool mustRun = true;
};

// nullopt for records that are not processes (or name no service).
std::optional<ProcessInfo> processInfo(const state::Record& rec);
// The same for a `service` record (a unit mesh-host did not install); nullopt otherwise.
std::optional<ProcessInfo> serviceInfo(const state::Record& rec);

}  // namespace mesh::apply
