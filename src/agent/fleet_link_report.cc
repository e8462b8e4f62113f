// FleetLink's node report: handed to a publisher of its own (agent/node_report.hh), made
// at the first report — a node whose cycles never change or fail anything never makes it.
#include "agent/fleet_link.hh"
#include "agent/node_report.hh"

namespace mesh::agent {

void FleetLink::publishReport(fleet::NodeReport report) {
  std::lock_guard guard(reportsMutex_);
  if (!reports_)
    reports_ = std::make_unique<ReportPublisher>(etcdConfig(), keys_, o_.node, nodeKey_, log_);
  reports_->publish(std::move(report));
}

}  // namespace mesh::agent
