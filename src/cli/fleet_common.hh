// What `fleet push` and `fleet status` share: the etcd endpoint and cluster keys from the
// fleet options, and one range read of the nodes prefix split into each node's keys.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "cli/commands.hh"
#include "fleet/etcd.hh"
#include "fleet/protocol.hh"

namespace mesh::cli {

int64_t nowMs();  // unix ms

// A serial as the CLI prints it: "-" for none.
std::string serialText(const std::optional<int64_t>& v);

// --etcd without trailing slashes.
std::string endpointOf(const FleetOptions& f);

// The cluster's keys; throws InputError when --cluster is not a valid name.
fleet::FleetKeys keysOf(const FleetOptions& f);

// What etcd holds for one node, from one range read.
struct NodeKeys {
  std::optional<fleet::EtcdKeyValue> declaration, status, seen;
};

// Every node with a declaration, status or seen key; other keys are ignored.
std::map<std::string, NodeKeys> nodesIn(const fleet::EtcdRange& range,
                                        const fleet::FleetKeys& keys);

// Whether a node's status shows a failed resource or cycle.
bool isFailing(const fleet::NodeStatus& s);

}  // namespace mesh::cli
