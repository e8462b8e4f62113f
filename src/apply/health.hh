// The health rule `mesh-host status` reports and exits by (docs/operating.md):
// what makes a resource failing or down, and the node unhealthy. Pure, over
// what the state store and the supervisor show, so it tests on plain values.
#pragma once

#include <optional>
#include <string_view>

namespace mesh::apply {

struct ResourceHealth {
  bool failed = false;  // its last outcome was `failed` or `skipped`
  bool down = false;    // its service is not running, and it did not fail
  // Its service runs, but its declared health check (or a Type=notify service's
  // READY=1) says unhealthy: as bad as down. "starting" is not unhealthy.
  bool unhealthy = false;
};

// `serviceRunning`: what the supervisor says of the resource's service; nullopt
// when it has none, or when the supervisor could not be asked (that fails the
// node once, in NodeHealth, not each resource).
// `declaredHealth`: what the agent's health check last said of the run in progress
// ("" none declared or not known, "starting", "healthy", "unhealthy").
ResourceHealth resourceHealth(std::string_view outcome, std::optional<bool> serviceRunning,
                              std::string_view declaredHealth = "");

struct NodeHealth {
  int failing = 0;                // resources failed, down or unhealthy
  int churning = 0;               // resources churning (apply/churn.hh)
  bool cycleError = false;        // the last cycle could not run
  bool declarationError = false;  // the agent's declaration does not load
  bool supervisorError = false;   // the supervisor cannot be asked
  // A cycle never finished: mesh-host died in it, or the agent was asked to stop in
  // it. Failing either way: resources it did not reach, pruning and restarts it
  // owes are left for the next cycle, and until then the node is not as declared.
  bool cutShort = false;

  void add(const ResourceHealth& r) { failing += r.failed || r.down || r.unhealthy; }
  // Healthy: nothing failing or churning and no error; otherwise status exits 1.
  bool healthy() const;
};

}  // namespace mesh::apply
