// Who a secret is sealed to when `mesh-host seal --etcd URL --nodes LIST` names nodes
// rather than keys: every node etcd knows in the cluster whose name the selector
// matches (names and globs, as `fleet push --nodes`), each with the key its enrollment
// holds — an enrollment signed by a trusted operator key (fleet/enroll.hh) — and
// only when everything the node signed (its status and heartbeat) verifies against
// that key. A node whose signed keys do not (it made a new key and was not enrolled
// again) is refused, not skipped: a value sealed to its enrolled key would not open
// there. A matched node with no enrollment and nothing signed is skipped and named.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "fleet/etcd.hh"
#include "fleet/protocol.hh"
#include "fleet/statement.hh"
#include "trust/node_key.hh"
#include "trust/operator_key.hh"

namespace mesh::fleet {

struct Recipient {
  std::string node;
  trust::NodePublicKey key;  // as enrolled
};

struct Recipients {
  std::vector<Recipient> nodes;      // sorted by name
  std::vector<std::string> skipped;  // matched, not enrolled (nothing signed either)
  std::size_t invalidNames = 0;      // matched names under the prefix that are no node names
};

// Throws InputError naming every refused node (a forged enrollment, a node whose signed
// keys do not verify, a named node that is not enrolled), or when a glob matches no
// enrolled node; nothing is sealed then.
Recipients enrolledRecipients(EtcdClient& etcd, const FleetKeys& keys, const Selector& selector,
                              const std::vector<trust::OperatorPublicKey>& trusted);

}  // namespace mesh::fleet
