// The judgement of one node (fleet/view.hh): what its keys say, whether what it signed is
// by its enrolled key, whether it is alive, its state, and why it is not converged. A pure
// function of the node's keys, the declaration values decoded once for all nodes, the
// trusted operator keys and the clock passed in: no thread, no clock read, no I/O. The
// memo (fleet/enroll.hh) only spares checks already made.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fleet/enroll.hh"
#include "fleet/protocol.hh"
#include "fleet/statement.hh"
#include "fleet/view.hh"
#include "trust/operator_key.hh"

namespace mesh::fleet {

// The declaration values that decode, each decoded once: a push puts the same value to
// every node it names (read-only while nodes are judged in parallel).
struct DecodedValue {
  PushedDeclaration pushed;
  Statement statement;
  std::string digest;  // valueDigest()
};
using DecodedValues = std::unordered_map<std::string_view, DecodedValue>;

// Each declaration value under `known` decoded once (one that does not decode is left out:
// judgeNode decodes it again, to say why under the node's own key).
DecodedValues decodeDistinct(const std::map<std::string, NodeKeys>& known);

// One node judged; `pushed` is set to its pushed declaration when that decodes (for
// versionsOf's "pushed by").
NodeView judgeNode(const std::string& node, const NodeKeys& k, const DecodedValues& decoded,
                   std::optional<PushedDeclaration>& pushed, const std::string& cluster,
                   const std::vector<trust::OperatorPublicKey>& trusted, int64_t nowMs,
                   VerifiedMemo* memo);

}  // namespace mesh::fleet
