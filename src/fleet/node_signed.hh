// What a node signs with its own key (trust::NodeKey) in etcd: its status, the copy of
// it at .../seen, and its heartbeat. Each is a JSON object with a "signature" field,
// "mesh-nsig:<base64 ed25519>", over the object's compact dump without that field (keys
// sorted, as nlohmann::json writes them), so that readers that ignore the field read it
// as before. `fleet status` checks it against the key an operator enrolled for the node
// (fleet/enroll.hh).
//
//   /mesh/<cluster>/nodes/<node>/heartbeat   Heartbeat on the node's lease, naming it: put
//                                            once per lease (liveness is the lease, renewed
//                                            with keep-alives, which are no etcd writes)
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fleet/protocol.hh"
#include "trust/node_key.hh"

namespace mesh::fleet {

// The node's lease (its status and heartbeat live on it) and how often the agent renews
// it: independent of the cycle interval, so that a dead node shows as down within about
// kHeartbeatTtl whatever --interval is.
inline constexpr std::chrono::seconds kHeartbeatTtl{15};
inline constexpr std::chrono::seconds kHeartbeatPeriod{5};
// A heartbeat that names no lease (an agent from before heartbeats lived on the lease, put
// every kHeartbeatPeriod) counts for `fleet status` while it is younger than this.
inline constexpr std::chrono::seconds kHeartbeatStale{30};

std::string nodePrefix(const FleetKeys& keys, const std::string& node);  // ".../nodes/<n>/"
std::string heartbeatKey(const FleetKeys& keys, const std::string& node);
std::string enrollmentKey(const FleetKeys& keys, const std::string& node);

// `jsonObject` (a JSON object's text) with its "signature" added.
std::string signNodeJson(std::string_view jsonObject, const trust::NodeKey& key);

enum class NodeSignature { Valid, Unsigned, Invalid };
// Whether `text` is a JSON object signed by `key` (Unsigned: no "signature" field).
// `parsed`, when given, receives the JSON without its signature (for a Valid one).
NodeSignature checkNodeJson(std::string_view text, const trust::NodePublicKey& key,
                            nlohmann::json* parsed = nullptr);

// Whom a node's signed JSON names: its top-level "node" and "cluster" ("" when absent or
// not a string; of a key given twice, the last, as a parse into a tree keeps).
struct SignedFor {
  std::string node, cluster;
};
// checkNodeJson, receiving only whom it names (for a Valid one): what `fleet status` checks
// of each status. The bytes the node signed are read once, picking those two fields, with
// no JSON tree built (10,000 statuses on a first run).
NodeSignature checkNodeJson(std::string_view text, const trust::NodePublicKey& key,
                            SignedFor& signedFor);

struct Heartbeat {
  std::string node;
  std::string cluster;
  int64_t pid = 0;
  int64_t atMs = 0;   // unix ms when it was put: when the lease was taken
  int64_t lease = 0;  // the lease it is put on; 0: none named (an older agent)
  bool operator==(const Heartbeat&) const = default;
};
std::string encodeHeartbeat(const Heartbeat& h);
// Throws InputError naming `where` when `text` is not a heartbeat.
Heartbeat decodeHeartbeat(std::string_view text, const std::string& where);

}  // namespace mesh::fleet
