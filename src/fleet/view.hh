// The fleet as an operator sees it: one range read of /mesh/<cluster>/nodes/ judged into a
// state per node (converged, behind, refused, failing, churning, down, unenrolled, forged),
// the reasons of each node that is not converged, and how many nodes run which declaration
// and who pushed it. A pure function of the range, the trusted operator keys and the clock,
// so that `fleet status` and `fleet serve` cannot judge a node differently; the states and
// their precedence are documented in docs/fleet.md. The folder fleet/view/ holds its parts:
// the judgement, the renderers (JSON and text) and the checking ahead of signatures
// while the range is still read (a thread of its own: view/check_ahead.hh).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fleet/enroll.hh"
#include "fleet/etcd.hh"
#include "fleet/node_signed.hh"
#include "fleet/protocol.hh"
#include "fleet/rollout_record.hh"
#include "fleet/statement.hh"
#include "trust/operator_key.hh"

namespace mesh::fleet {

// The first that applies wins, in this order (docs/fleet.md).
enum class NodeState {
  Forged,
  Unenrolled,
  Down,
  Refused,
  Failing,
  Paused,  // mesh-host pause: its cycles only plan
  Behind,
  Churning,
  Converged
};
const char* stateName(NodeState s);  // "converged", "behind", …

// One node as the operator sees it.
struct NodeView {
  std::string node;
  NodeState state = NodeState::Down;
  bool up = false;  // its status key exists (the lease is alive) and its heartbeat is fresh
  // What is pushed to it, as its statement says (unverified: the node verifies).
  std::optional<Statement> wanted;
  int64_t wantedRevision = 0;  // the declaration key's mod revision, 0 none
  std::string wantedValue;     // valueDigest() of the declaration key's value, "" none
  // The live status, or for a down node the last one seen; none for a forged or
  // unenrolled node (nothing it says can be believed).
  std::optional<NodeStatus> status;
  std::vector<std::string> unreadable;  // keys that did not decode
  // Enrollment: "" verified, else "unenrolled" or "forged" (why in trustReason).
  std::string trust;
  std::string trustReason;
  int64_t heartbeatMs = 0;  // when it was seen alive, unix ms: now while its lease holds; 0 none
  std::string downReason;   // why a node whose status key exists is down all the same
  // Why it is not converged, one line per reason ("refused serial 7 …"); empty when
  // converged. lastError: the error among them an operator acts on first ("" none).
  std::vector<std::string> reasons;
  std::string lastError;

  // LAST SEEN: now for a node that is up, else when its status was last put (a node that
  // idles writes nothing, so a down node died some time after that); 0 never.
  int64_t lastSeenMs() const;
};

// How many nodes apply one declaration (digest and serial), from their live or last seen
// status, and who pushed it, from a node's statement naming the same digest and serial
// (the newest such push); none when no node's statement names it any more.
struct VersionView {
  std::string digest;  // "" nothing applied (or never seen)
  std::optional<int64_t> serial;
  std::vector<std::string> nodes;
  std::string pushedBy;  // "mesh-op:…", "" not known
  int64_t pushedAtMs = 0;
  bool pushedVerified = false;  // the statement's signature is by a trusted key
};

struct FleetView {
  std::string cluster;
  int64_t revision = 0;               // the etcd revision the range was read at
  int64_t nowMs = 0;                  // the clock it was judged by
  std::vector<NodeView> nodes;        // sorted by name
  std::vector<VersionView> versions;  // most nodes first
  // The cluster's current or last rollout (fleet/rollout_record.hh), read by the caller
  // beside the range; nullopt none.
  std::optional<RolloutRecord> rollout;
  size_t count(NodeState s) const;
  bool allConverged() const { return count(NodeState::Converged) == nodes.size(); }
};

// Whether the node's status key sits on the lease its (signed) status names: then the
// node is up by that alone, and its heartbeat is neither needed nor checked.
bool statusOnItsLease(const NodeKeys& k, const std::optional<NodeStatus>& status);

// Liveness, the one rule. An idle node writes nothing: liveness is the lease. A node whose
// status key exists is up while its status sits on the live lease it names
// (statusOnItsLease), or else while its status and its verified heartbeat sit on one live
// lease that both name; a status or heartbeat put back on another lease is down. A
// heartbeat naming no lease is an older agent's, put every few seconds: it counts while
// it is no older than kHeartbeatStale by `nowMs`. Returns why a node whose status key
// exists is down ("" up); `beat` is its decoded heartbeat (nullopt: none).
std::string downReason(const NodeKeys& k, const std::optional<NodeStatus>& status,
                       const std::optional<Heartbeat>& beat, int64_t nowMs);

// Judges every node under keys.nodesPrefix() in `range`.
// `memo` (fleet/enroll.hh), for a reader that judges again and again (fleet serve):
// what it already verified is not verified again.
FleetView viewFleet(const EtcdRange& range, const FleetKeys& keys,
                    const std::vector<trust::OperatorPublicKey>& trusted, int64_t nowMs,
                    VerifiedMemo* memo = nullptr);
// The same, the range's values moved rather than copied (`fleet status`, done with it).
FleetView viewFleet(EtcdRange&& range, const FleetKeys& keys,
                    const std::vector<trust::OperatorPublicKey>& trusted, int64_t nowMs,
                    VerifiedMemo* memo = nullptr);

// "mesh-op:DugJcJ8p…": a key shortened for tables and the page.
std::string shortKey(const std::string& key);

}  // namespace mesh::fleet
