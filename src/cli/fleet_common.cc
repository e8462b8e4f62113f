#include "cli/fleet_common.hh"

#include <chrono>

namespace mesh::cli {

void FleetOptions::addTo(CLI::App& cmd) {
  cmd.add_option("--etcd", etcd, "the etcd endpoint (http://host:2379)")
      ->option_text("URL")
      ->required();
  cmd.add_option("--cluster", cluster,
                 "the cluster: its keys live under /mesh/NAME/ (default default)")
      ->option_text("NAME")
      ->default_str("default");
  cmd.add_flag("--json", json, "machine-readable output on stdout");
}

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string serialText(const std::optional<int64_t>& v) {
  return v ? std::to_string(*v) : "-";
}

std::string endpointOf(const FleetOptions& f) {
  std::string url = f.etcd;
  while (url.size() > 1 && url.back() == '/') url.pop_back();
  return url;
}

fleet::FleetKeys keysOf(const FleetOptions& f) {
  fleet::checkFleetName(f.cluster, "--cluster");
  return fleet::FleetKeys{f.cluster};
}

// Every node with a declaration, status or seen key; other keys are ignored.
std::map<std::string, NodeKeys> nodesIn(const fleet::EtcdRange& range,
                                        const fleet::FleetKeys& keys) {
  std::map<std::string, NodeKeys> nodes;
  for (const auto& kv : range.kvs) {
    const auto split = keys.splitNodeKey(kv.key);
    if (!split) continue;
    const auto& [node, what] = *split;
    if (what == "declaration") nodes[node].declaration = kv;
    if (what == "status") nodes[node].status = kv;
    if (what == "seen") nodes[node].seen = kv;
  }
  return nodes;
}

bool isFailing(const fleet::NodeStatus& s) {
  return s.failed > 0 || !s.failing.empty() || !s.cycleError.empty();
}

}  // namespace mesh::cli
