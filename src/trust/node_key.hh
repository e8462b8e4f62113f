// The node's own key (<state-dir>/node.key, 0600): a 32-byte seed from which the
// node derives its key pairs and the key for keyed digests of secrets. A keyed
// digest can be compared with another made by the same node, but without the key
// it cannot be checked against guesses, so it is safe to store and print.
// The node also signs with it (ed25519): its statuses and heartbeats in fleet
// mode, which `fleet status` checks against the key an operator enrolled.
#pragma once

#include <sodium.h>

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "util/secret.hh"

namespace mesh::trust {

// A node's public key as operators hold it: the sealing half (X25519) and the
// signing half (ed25519). Its text is "mesh-node:<base64 of both, 64 bytes>";
// the older text of the sealing half alone (32 bytes) still seals, but cannot
// check a signature.
struct NodePublicKey {
  std::array<unsigned char, crypto_box_PUBLICKEYBYTES> box{};
  std::array<unsigned char, crypto_sign_PUBLICKEYBYTES> sign{};

  std::string text() const;
  // Parses the 64-byte text (surrounding whitespace allowed); throws InputError
  // naming `where` when it is not one, saying so when it is the sealing half alone.
  [[nodiscard]] static NodePublicKey parse(std::string_view text, const std::string& where);
  bool operator==(const NodePublicKey&) const = default;
};

// The text a node signature takes: "mesh-nsig:<base64 ed25519 signature>".
// True when `signatureText` is `key`'s signature of exactly `bytes`.
bool nodeSignatureMatches(const NodePublicKey& key, std::string_view bytes,
                          std::string_view signatureText);

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

  // The node's public key (NodePublicKey: sealing and signing halves), as text:
  // "mesh-node:<base64>". Operators seal credentials to it and enroll it.
  std::string publicKeyText() const;
  NodePublicKey publicKey() const;
  // "mesh-nsig:<base64>": this node's ed25519 signature of exactly `bytes`.
  std::string sign(std::string_view bytes) const;
  // Opens a value sealed to this node, in either form (trust/sealed.hh). nullopt when
  // it was sealed to other keys only or tampered with; openSealedWith says which.
  std::optional<Secret> openSealed(const std::string& sealed) const;
  // Opens one crypto_box_seal box made to this node's sealing key into `out`
  // (size - crypto_box_SEALBYTES bytes); false when it does not open.
  bool openBox(const unsigned char* box, size_t size, unsigned char* out) const;

  // Seals `secret` to a node's public key text; returns the text for `sealed = "…"`
  // (trust/sealed.hh: sealToMany with one key).
  static std::string seal(const Secret& secret, const std::string& publicKeyText);

 private:
  NodeKey() = default;
  std::array<unsigned char, 32> seed_{};
  std::array<unsigned char, 32> digestKey_{};
  std::array<unsigned char, 32> boxPublic_{};
  std::array<unsigned char, 32> boxSecret_{};
  std::array<unsigned char, crypto_sign_PUBLICKEYBYTES> signPublic_{};
  std::array<unsigned char, crypto_sign_SECRETKEYBYTES> signSecret_{};
  void derive();
};

}  // namespace mesh::trust
