// What `fleet push` and `fleet status` share: the etcd endpoint and cluster keys from the
// fleet options, and one range read of the nodes prefix split into each node's keys.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "cli/commands.hh"
#include "fleet/etcd.hh"
#include "fleet/protocol.hh"

namespace mesh::cli {

// A serial as the CLI prints it: "-" for none.
std::string serialText(const std::optional<int64_t>& v);

// How long a fleet command's call keeps trying while etcd's members answer but none can
// serve it (a leader election): `fleet push` waits its --lock-timeout instead.
inline constexpr std::chrono::milliseconds kFleetRetryWithin{10000};

// --etcd: the members' URLs, comma-separated, without trailing slashes.
std::string endpointOf(const FleetOptions& f);
// How to reach etcd: --etcd and its TLS and auth options (cli/fleet_options.hh); calls
// keep trying for kFleetRetryWithin.
fleet::EtcdConfig etcdConfigOf(const FleetOptions& f);

// The cluster's keys; throws InputError when --cluster is not a valid name.
fleet::FleetKeys keysOf(const FleetOptions& f);

// One range read split into each node's keys, and a failing status: fleet/protocol.hh.
using fleet::isFailing;
using fleet::NodeKeys;
using fleet::nodesIn;

}  // namespace mesh::cli
