// Node enrollment: an operator-signed record of a node's public key in etcd, and the
// check `fleet status` makes of everything a node signs against it. Without it anyone
// who can write to etcd could put a status that shows a node converged.
//
//   /mesh/<cluster>/nodes/<node>/enrollment   {"node", "cluster", "key": "mesh-node:…",
//                                              "enrolled_at_ms", "enrolled_by": "mesh-op:…",
//                                              "signature": "mesh-sig:…"}
//
// The operator signs (ed25519, the key `fleet push` signs with) the text
// enrollmentText(cluster, node, key, at): the record is bound to its cluster and node,
// so it cannot be copied to another node's key.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "fleet/etcd.hh"
#include "fleet/protocol.hh"
#include "trust/node_key.hh"
#include "trust/operator_key.hh"

namespace mesh::fleet {

struct Enrollment {
  std::string node, cluster;
  trust::NodePublicKey key;
  int64_t enrolledAtMs = 0;
  trust::OperatorPublicKey enrolledBy;
};

// What the operator signs.
std::string enrollmentText(const std::string& cluster, const std::string& node,
                           const trust::NodePublicKey& key, int64_t atMs);
// The record's JSON, signed by `op`.
std::string encodeEnrollment(const std::string& cluster, const std::string& node,
                             const trust::NodePublicKey& key, int64_t atMs,
                             const trust::OperatorKey& op);
// The record at `where` for (cluster, node), checked: throws InputError saying why when
// it is not a record, names another node or cluster, is signed by a key not in
// `trusted`, or its signature does not match.
Enrollment verifyEnrollment(const std::string& text, const std::string& cluster,
                            const std::string& node,
                            const std::vector<trust::OperatorPublicKey>& trusted,
                            const std::string& where);

// What `fleet status` makes of one node's signed keys.
struct NodeTrust {
  enum class Verdict {
    Verified,    // enrolled, and every status, seen and heartbeat key verifies
    Unenrolled,  // it has signed keys but no enrollment record
    Forged,      // a record or signature that does not verify
  };
  Verdict verdict = Verdict::Verified;
  std::string reason;  // for Unenrolled and Forged
  std::optional<Enrollment> enrollment;
};

// What a long-running reader (fleet serve, push --wait) has already found good: a
// value's bytes with the key that verified them (or the cluster and node an enrollment
// was checked for), by digest. A value checked again with the same inputs is good
// without its signature checked again; one changed by a single byte has another digest.
// Only successes are kept, at most kMaxEntries (then it starts afresh). Thread-safe.
class VerifiedMemo {
 public:
  static constexpr size_t kMaxEntries = 100000;
  bool has(const std::string& digest) const;
  void add(const std::string& digest);

 private:
  mutable std::mutex mutex_;
  std::unordered_set<std::string> seen_;
};

// `enrollment` is the node's record, if any; `signedKeys` its status, seen and heartbeat
// keys that exist. Each must be signed by the enrolled key and name this node and cluster.
// `memo`, when given, spares checking again what it already found good.
NodeTrust checkNode(const std::string& cluster, const std::string& node,
                    const std::optional<EtcdKeyValue>& enrollment,
                    const std::vector<EtcdKeyValue>& signedKeys,
                    const std::vector<trust::OperatorPublicKey>& trusted,
                    VerifiedMemo* memo = nullptr);

}  // namespace mesh::fleet
