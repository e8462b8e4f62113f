// The node's own key (<state-dir>/node.key, 0600): a 32-byte seed from which the
// node derives its key pairs and the key for keyed digests of secrets. A keyed
// digest can be compared with another made by the same node, but without the key
// it cannot be checked against guesses, so it is safe to store and print.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "util/secret.hh"

namespace mesh::trust {

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

  // The node's public key for sealing (X25519, libsodium crypto_box), as text:
  // "mesh-node:<base64>". Operators seal credentials to it.
  std::string publicKeyText() const;
  // Opens a value sealed to this node (crypto_box_seal). nullopt when it was
  // sealed to another key or tampered with.
  std::optional<Secret> openSealed(const std::string& sealed) const;

  // Seals `secret` to a node's public key text; returns the text for `sealed = "…"`.
  static std::string seal(const Secret& secret, const std::string& publicKeyText);

 private:
  NodeKey() = default;
  std::array<unsigned char, 32> seed_{};
  std::array<unsigned char, 32> digestKey_{};
  std::array<unsigned char, 32> boxPublic_{};
  std::array<unsigned char, 32> boxSecret_{};
  void derive();
};

}  // namespace mesh::trust
