// What a node signs with its own key (trust::NodeKey) in etcd: its status, the copy of
// it at .../seen, and its heartbeat. Each is a JSON object with a "signature" field,
// "mesh-nsig:<base64 ed25519>", over the object's compact dump without that field (keys
// sorted, as nlohmann::json writes them), so that readers that ignore the field read it
// as before. `fleet status` checks it against the key an operator enrolled for the node
// (fleet/enroll.hh).
//
//   /mesh/<cluster>/nodes/<node>/heartbeat   Heartbeat, no lease: put every kHeartbeatPeriod
//                                            while the agent's event loop runs
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "fleet/protocol.hh"
#include "trust/node_key.hh"

namespace mesh::fleet {

// The node's lease (its status lives on it) and how often the agent renews it and puts
// its heartbeat: independent of the cycle interval, so that a dead node shows as down
// within about kHeartbeatTtl + kHeartbeatPeriod whatever --interval is.
inline constexpr std::chrono::seconds kHeartbeatTtl{15};
inline constexpr std::chrono::seconds kHeartbeatPeriod{5};
// `fleet status` counts a node as down when its newest heartbeat is older than this
// (by the reader's clock): a status replayed on another lease does not look alive.
inline constexpr std::chrono::seconds kHeartbeatStale{30};

std::string nodePrefix(const FleetKeys& keys, const std::string& node);  // ".../nodes/<n>/"
std::string heartbeatKey(const FleetKeys& keys, const std::string& node);
std::string enrollmentKey(const FleetKeys& keys, const std::string& node);

// `jsonObject` (a JSON object's text) with its "signature" added.
std::string signNodeJson(std::string_view jsonObject, const trust::NodeKey& key);

enum class NodeSignature { Valid, Unsigned, Invalid };
// Whether `text` is a JSON object signed by `key` (Unsigned: no "signature" field).
NodeSignature checkNodeJson(std::string_view text, const trust::NodePublicKey& key);

struct Heartbeat {
  std::string node;
  std::string cluster;
  int64_t pid = 0;
  int64_t atMs = 0;  // unix ms when it was put
  bool operator==(const Heartbeat&) const = default;
};
std::string encodeHeartbeat(const Heartbeat& h);
// Throws InputError naming `where` when `text` is not a heartbeat.
Heartbeat decodeHeartbeat(std::string_view text, const std::string& where);

}  // namespace mesh::fleet
