#include "apply/health.hh"

namespace mesh::apply {

ResourceHealth resourceHealth(std::string_view outcome, std::optional<bool> serviceRunning) {
  ResourceHealth h;
  h.failed = outcome == "failed" || outcome == "skipped";
  // Not running: stopped, failed, starting, or waiting for Restart=.
  h.down = serviceRunning && !*serviceRunning && !h.failed;
  return h;
}

bool NodeHealth::healthy() const {
  return failing + churning == 0 && !cycleError && !declarationError && !supervisorError &&
         !cutShort;
}

}  // namespace mesh::apply
