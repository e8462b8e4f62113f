// An operator's signing key (ed25519, libsodium crypto_sign). The file holds the
// 32-byte seed: "mesh-host operator key v1\n<base64 seed>\n", mode 0600. The
// public half is printed as "mesh-op:<base64>"; nodes trust it with --trust or
// a file in <state-dir>/trusted/. docs/trust.md describes the formats.
#pragma once

#include <sodium.h>

#include <array>
#include <string>
#include <string_view>

namespace mesh::trust {

// An operator's public key: what a node trusts and a signature names.
struct OperatorPublicKey {
  std::array<unsigned char, crypto_sign_PUBLICKEYBYTES> bytes{};

  // "mesh-op:<base64>"
  std::string text() const;
  // Parses "mesh-op:<base64>" (surrounding whitespace allowed); throws
  // InputError naming `where` when it is not one.
  [[nodiscard]] static OperatorPublicKey parse(std::string_view text, const std::string& where);
  bool operator==(const OperatorPublicKey&) const = default;
};

class OperatorKey {
 public:
  static OperatorKey generate();
  // Throws InputError when the file is missing or not an operator key.
  static OperatorKey load(const std::string& path);
  // Writes a new key file (0600, atomically); refuses to replace an existing one,
  // since a lost operator key cannot be recovered.
  void saveNew(const std::string& path) const;

  OperatorKey(OperatorKey&&) noexcept;
  OperatorKey& operator=(OperatorKey&&) noexcept;
  OperatorKey(const OperatorKey&) = delete;
  OperatorKey& operator=(const OperatorKey&) = delete;
  ~OperatorKey();

  const OperatorPublicKey& publicKey() const { return public_; }
  // The ed25519 signature of exactly `bytes`.
  std::array<unsigned char, crypto_sign_BYTES> sign(std::string_view bytes) const;

 private:
  OperatorKey() = default;
  void derive();
  std::array<unsigned char, crypto_sign_SEEDBYTES> seed_{};
  std::array<unsigned char, crypto_sign_SECRETKEYBYTES> secret_{};
  OperatorPublicKey public_;
};

}  // namespace mesh::trust
