#include "cli/fleet_common.hh"

namespace mesh::cli {

void FleetOptions::addTo(CLI::App& cmd, bool takesJson) {
  cmd.add_option("--etcd", etcd, "the etcd endpoint (http://host:2379)")
      ->option_text("URL")
      ->required();
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
  std::string url = f.etcd;
  while (url.size() > 1 && url.back() == '/') url.pop_back();
  return url;
}

fleet::EtcdConfig etcdConfigOf(const FleetOptions& f) {
  return f.connection.config(endpointOf(f));
}

fleet::FleetKeys keysOf(const FleetOptions& f) {
  fleet::checkFleetName(f.cluster, "--cluster");
  return fleet::FleetKeys{f.cluster};
}

}  // namespace mesh::cli
