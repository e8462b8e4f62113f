// Signed declarations: a detached ed25519 signature over the exact bytes of a
// declaration, in DECL.sig, and the check a node makes against the operator
// keys it trusts. The file format and the rules are in docs/trust.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trust/operator_key.hh"

namespace mesh::trust {

// The signature file's text: "mesh-sig:<base64 signer public key>:<base64 signature>\n".
std::string signatureText(const OperatorKey& key, std::string_view bytes);

struct DetachedSignature {
  OperatorPublicKey signer;
  std::array<unsigned char, crypto_sign_BYTES> signature{};
};
// Parses a signature file's text; throws InputError naming `where` when malformed.
[[nodiscard]] DetachedSignature parseSignature(std::string_view text, const std::string& where);
// True when `sig` is `sig.signer`'s signature of exactly `bytes`.
bool signatureMatches(const DetachedSignature& sig, std::string_view bytes);

// The operator keys a node trusts: each --trust value (a key text, or a file
// holding one) and every <stateDir>/trusted/*.pub. Throws InputError for a
// value or file that is not a key. Empty: the node requires no signature.
std::vector<OperatorPublicKey> loadTrustedKeys(const std::vector<std::string>& trustOptions,
                                               const std::string& stateDir);

// Checks the declaration at `path`, whose bytes are `text`, against `path`.sig.
// nullopt when `trusted` is empty (nothing to check); otherwise the signer's
// key, or InputError saying whether it is unsigned, tampered or untrusted.
std::optional<OperatorPublicKey> verifyDeclaration(const std::string& path, std::string_view text,
                                                   const std::vector<OperatorPublicKey>& trusted);

// The same check for a declaration that did not come from a file (etcd): `sigText`
// is the signature file's text ("" when unsigned), `sigWhere` names it in errors.
OperatorPublicKey verifySignedText(const std::string& where, std::string_view text,
                                   std::string_view sigText, const std::string& sigWhere,
                                   const std::vector<OperatorPublicKey>& trusted);

// Shared with operator_key.cc.
std::string_view trimSpace(std::string_view text);

}  // namespace mesh::trust
