// The agent's health checks (a process's `health`, or READY=1 of a Type=notify one) as
// `mesh-host status` reads them: <stateDir>/health-checks, written by the agent only when
// a service's health changes (never per check) and removed when it stops. Each entry names
// the run it judged (its supervisor's start, µs), so that a reader tells a judgement of
// the run in progress from one of a run that has ended.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace mesh::apply {

struct HealthSeen {
  std::string health;  // "starting", "healthy", "unhealthy"
  std::string reason;  // why unhealthy (bounded, escaped: agent/health_probe.hh)
  int64_t runSinceUs = 0;
  bool operator==(const HealthSeen&) const = default;
};

struct HealthNote {
  int64_t pid = 0;                             // the agent that wrote it
  int64_t at = 0;                              // unix ms
  std::map<std::string, HealthSeen> services;  // by resource id
};

// Never throws: the checks go on whether or not `status` can read about them.
void noteHealth(const std::string& stateDir, const HealthNote& n) noexcept;
std::optional<HealthNote> healthNote(const std::string& stateDir);
void clearHealthNote(const std::string& stateDir) noexcept;

}  // namespace mesh::apply
