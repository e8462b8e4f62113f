#include "cli/fleet_common.hh"

namespace mesh::cli {

void FleetOptions::addTo(CLI::App& cmd, bool takesJson) {
  addEtcdOption(cmd, etcd, "etcd")->required();
  cmd.add_option("--cluster", cluster,
                 "the cluster: its keys live under /mesh/NAME/ (default default)")
      ->option_text("NAME")
      ->default_str("default");
  if (takesJson) cmd.add_flag("--json", json, "machine-readable output on stdout");
  connection.addTo(cmd);
}

std::string serialText(const std::optional<int64_t>& v) {
  return v ? std::to_string(*v) : "-";
}

std::string endpointOf(const FleetOptions& f) {
  return etcdEndpoints(f.etcd);
}

fleet::EtcdConfig etcdConfigOf(const FleetOptions& f) {
  auto c = f.connection.config(endpointOf(f));
  c.retryWithin = kFleetRetryWithin;
  return c;
}

fleet::FleetKeys keysOf(const FleetOptions& f) {
  fleet::checkFleetName(f.cluster, "--cluster");
  return fleet::FleetKeys{f.cluster};
}

}  // namespace mesh::cli
