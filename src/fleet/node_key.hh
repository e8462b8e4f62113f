// The node's own key (<state-dir>/node.key, 0600): a 32-byte seed from which the
// node derives its key pairs and the key for keyed digests of secrets. A keyed
// digest can be compared with another made by the same node, but without the key
// it cannot be checked against guesses, so it is safe to store and print.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "util/secret.hh"

namespace mesh::fleet {

class NodeKey {
 public:
  // Loads <stateDir>/node.key, creating it (atomically, 0600) when missing.
  static NodeKey loadOrCreate(const std::string& stateDir);
  // Loads it when present; nullopt otherwise (plan must not create it).
  static std::optional<NodeKey> load(const std::string& stateDir);
  // A key that lives only in memory (plan on a node that has none yet).
  static NodeKey ephemeral();

  // "keyed:<64 hex>" — BLAKE2b-256 keyed with a subkey derived for this purpose.
  std::string keyedDigest(const Secret& secret) const;

 private:
  NodeKey() = default;
  std::array<unsigned char, 32> seed_{};
  std::array<unsigned char, 32> digestKey_{};
  void derive();
};

}  // namespace mesh::fleet
