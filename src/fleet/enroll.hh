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

#include <sodium.h>

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
#include "util/fd.hh"

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

// What a reader has already found good: a value's bytes with the key that verified them
// (or the cluster and node an enrollment was checked for), by digest. A value checked
// again with the same inputs is good without its signature checked again; one changed by
// a single byte has another digest. Whether an enrollment's signer is trusted is checked
// every time, never remembered. Only successes are kept, at most kMaxEntries (then it
// starts afresh). Thread-safe.
//
// A long-running reader (fleet serve, push --wait) keeps one in memory. `fleet status`
// keeps one between runs with persistIn(dir): there each entry is HMAC-SHA256(key,
// digest) under a random 32-byte key made once in DIR/key (mode 0600, DIR 0700), so an
// entry that counts can be made only by someone who can read that key; a missing,
// unreadable or malformed key or memo file just means everything is verified afresh.
class VerifiedMemo {
 public:
  static constexpr size_t kMaxEntries = 100000;
  bool has(const std::string& digest) const;
  void add(const std::string& digest);

  // Loads DIR/verified (made with DIR/key, which is created when missing) and keeps the
  // memo there from now on; false (an in-memory memo, as before) when DIR or its key
  // cannot be made or read, or the key is readable by others — or when DIR or its parent
  // is a symbolic link or is not the running user's (nothing is written there then).
  bool persistIn(const std::string& dir);
  // Writes DIR/verified (atomically, 0600): the entries used or added since persistIn,
  // so that what no longer is in etcd drops out. Does nothing for an in-memory memo or
  // when nothing changed; never throws (the memo only spares work).
  void save() const;

 private:
  // The entry for `digest`: its HMAC tag once persistIn set the key (before any has or
  // add, which call this without the lock).
  std::string entryOf(const std::string& digest) const;
  mutable std::mutex mutex_;
  std::unordered_set<std::string> seen_;
  Fd dir_;                                        // unset: in memory only
  std::string key_;                               // the HMAC key, with dir_
  crypto_auth_hmacsha256_state keyed_{};          // the HMAC's state keyed with key_
  mutable std::unordered_set<std::string> used_;  // with dir_: what save() writes
  size_t loaded_ = 0;                             // entries read by persistIn
  bool added_ = false;
};

// `enrollment` is the node's record, if any; `signedKeys` its status, seen and heartbeat
// keys that exist. Each must be signed by the enrolled key and name this node and cluster.
// `memo`, when given, spares checking again what it already found good.
NodeTrust checkNode(const std::string& cluster, const std::string& node,
                    const std::optional<EtcdKeyValue>& enrollment,
                    const std::vector<EtcdKeyValue>& signedKeys,
                    const std::vector<trust::OperatorPublicKey>& trusted,
                    VerifiedMemo* memo = nullptr);

// What checkNode will check of a node whose status sits in etcd, checked ahead into
// `memo` (fleet status checks while the range still arrives): the enrollment's signature,
// then the status's by the key it enrolls. Only what checkNode itself would remember is
// remembered; whatever does not verify is left to checkNode to say why. Never throws.
void checkAhead(const std::string& cluster, const std::string& node, const std::string& enrollment,
                const std::string& status, const std::vector<trust::OperatorPublicKey>& trusted,
                VerifiedMemo& memo);

}  // namespace mesh::fleet
