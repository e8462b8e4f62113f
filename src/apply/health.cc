#include "apply/health.hh"

namespace mesh::apply {

ResourceHealth resourceHealth(std::string_view outcome, std::optional<bool> serviceRunning,
                              std::string_view declaredHealth) {
  ResourceHealth h;
  h.failed = outcome == "failed" || outcome == "skipped";
  // Not running: stopped, failed, starting, or waiting for Restart=.
  h.down = serviceRunning && !*serviceRunning && !h.failed;
  h.unhealthy = declaredHealth == "unhealthy" && !h.failed && !h.down;
  return h;
}

bool NodeHealth::healthy() const {
  return failing + churning == 0 && !cycleError && !declarationError && !supervisorError &&
         !cutShort;
}

}  // namespace mesh::apply
