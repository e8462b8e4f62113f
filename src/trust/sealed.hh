// A sealed value: a secret only the nodes it was sealed to can open, as the text of a
// credential's `sealed = "…"`. Two forms, both opened by NodeKey::openSealed:
//
//   sealed:<base64>            v1: crypto_box_seal of the secret to one node's key.
//   sealed:v2:<N>:<base64>     v2: N recipients. A random 32-byte data key is wrapped to
//                              each recipient (crypto_box_seal, anonymous: a wrapped key
//                              names no key), the wraps in random order; the secret is
//                              under XChaCha20-Poly1305 with that data key, its associated
//                              data the text prefix and every wrap, so neither the count
//                              nor any wrap can be changed, dropped or added unseen.
//
// The base64 of v2 is: N wraps of kWrapBytes, a 24-byte nonce, the ciphertext (the
// secret's length + 16). Whoever reads the value learns how many recipients it has and
// the secret's length, never who the recipients are, nor anything of the secret.
// `mesh-host seal` writes v2 always; v1 values (older mesh-host) still open.
#pragma once

#include <sodium.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/secret.hh"

namespace mesh::trust {

class NodeKey;

inline constexpr std::size_t kWrapBytes = crypto_box_SEALBYTES + 32;
// The most recipients one value may have (a node tries each wrap: ~50 µs a wrap).
inline constexpr std::size_t kMaxRecipients = 10000;

// The sealing half of a node's public key from its text: mesh-node:<base64 of 64 bytes>
// or, as older versions printed it, of the 32-byte sealing half alone. Throws InputError.
std::vector<unsigned char> sealingKeyOf(std::string_view publicKeyText);

// Seals `secret` to every key (texts as sealingKeyOf takes them; at least one, at most
// kMaxRecipients, duplicates refused): the v2 text. Throws InputError.
std::string sealToMany(const Secret& secret, const std::vector<std::string>& publicKeyTexts);

struct OpenedSealed {
  enum class Result {
    Opened,         // `secret` holds it
    NotARecipient,  // v2, well formed, and no wrap opens with this key
    NotForThisKey,  // v1: sealed to another key or damaged (libsodium cannot tell)
    Damaged,        // v2: a wrap opened but the secret does not (tampered)
    Malformed,      // not a sealed value at all
  };
  Result result = Result::Malformed;
  std::optional<Secret> secret;
  std::size_t recipients = 0;  // v2: as the value says; v1: 1
};

OpenedSealed openSealedWith(const NodeKey& key, std::string_view sealed);

}  // namespace mesh::trust
