#include "trust/node_key.hh"

#include <sodium.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "trust/key_file.hh"
#include "trust/sealed.hh"
#include "util/base64.hh"
#include "util/digest.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/state_layout.hh"

namespace mesh::trust {

namespace {
constexpr std::string_view kHeader = "mesh-host node key v1\n";
constexpr char kDigestContext[crypto_kdf_CONTEXTBYTES + 1] = "meshdgst";
constexpr char kBoxContext[crypto_kdf_CONTEXTBYTES + 1] = "meshseal";
constexpr char kSignContext[crypto_kdf_CONTEXTBYTES + 1] = "meshsign";
constexpr std::string_view kPublicPrefix = "mesh-node:";
constexpr std::string_view kSignaturePrefix = "mesh-nsig:";

}  // namespace

void NodeKey::derive() {
  static_assert(crypto_kdf_KEYBYTES == 32);
  crypto_kdf_derive_from_key(digestKey_.data(), digestKey_.size(), 1, kDigestContext, seed_.data());
  static_assert(crypto_box_SEEDBYTES == 32 && crypto_box_PUBLICKEYBYTES == 32 &&
                crypto_box_SECRETKEYBYTES == 32);
  std::array<unsigned char, 32> boxSeed{};
  crypto_kdf_derive_from_key(boxSeed.data(), boxSeed.size(), 2, kBoxContext, seed_.data());
  crypto_box_seed_keypair(boxPublic_.data(), boxSecret_.data(), boxSeed.data());
  sodium_memzero(boxSeed.data(), boxSeed.size());
  // A third subkey, so that the sealing and digest keys stay what they were.
  static_assert(crypto_sign_SEEDBYTES == 32);
  std::array<unsigned char, 32> signSeed{};
  crypto_kdf_derive_from_key(signSeed.data(), signSeed.size(), 3, kSignContext, seed_.data());
  crypto_sign_seed_keypair(signPublic_.data(), signSecret_.data(), signSeed.data());
  sodium_memzero(signSeed.data(), signSeed.size());
}

std::string NodePublicKey::text() const {
  std::array<unsigned char, 64> both{};
  std::copy(box.begin(), box.end(), both.begin());
  std::copy(sign.begin(), sign.end(), both.begin() + 32);
  return std::string(kPublicPrefix) + base64Encode(both.data(), both.size());
}

NodePublicKey NodePublicKey::parse(std::string_view text, const std::string& where) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  auto bytes = text.substr(0, kPublicPrefix.size()) == kPublicPrefix
                   ? base64Decode(text.substr(kPublicPrefix.size()), " \t\r\n")
                   : std::nullopt;
  if (bytes && bytes->size() == crypto_box_PUBLICKEYBYTES)
    throw InputError(
        "{}: '{}' is the sealing half of a node key only, as mesh-host printed it before nodes "
        "signed their statuses; run mesh-host key show on the node with this version",
        where, text);
  if (!bytes || bytes->size() != 64)
    throw InputError(
        "{}: '{}' is not a node's public key; it looks like mesh-node:<base64> (mesh-host key "
        "show on that node)",
        where, text);
  NodePublicKey k;
  std::copy(bytes->begin(), bytes->begin() + 32, k.box.begin());
  std::copy(bytes->begin() + 32, bytes->end(), k.sign.begin());
  return k;
}

bool nodeSignatureMatches(const NodePublicKey& key, std::string_view bytes,
                          std::string_view signatureText) {
  if (signatureText.substr(0, kSignaturePrefix.size()) != kSignaturePrefix) return false;
  auto sig = base64Decode(signatureText.substr(kSignaturePrefix.size()), " \t\r\n");
  if (!sig || sig->size() != crypto_sign_BYTES) return false;
  return crypto_sign_verify_detached(reinterpret_cast<const unsigned char*>(sig->data()),
                                     reinterpret_cast<const unsigned char*>(bytes.data()),
                                     bytes.size(), key.sign.data()) == 0;
}

NodeKey NodeKey::ephemeral() {
  NodeKey k;
  randombytes_buf(k.seed_.data(), k.seed_.size());
  k.derive();
  return k;
}

std::optional<NodeKey> NodeKey::load(const std::string& stateDir) {
  const auto path = layout::under(stateDir, layout::kNodeKey);
  std::optional<std::string> text;
  try {
    text = readKeyFile(path, KeyFileKind::Private);
  } catch (const InputError& e) {
    // The node's own file, not the operator's input: a failure, not exit 2.
    throw Error(std::string(e.what()));
  }
  if (!text) return std::nullopt;
  NodeKey k;
  auto b64 = text->substr(std::min(text->size(), kHeader.size()));
  while (!b64.empty() && (b64.back() == '\n' || b64.back() == ' ')) b64.pop_back();
  if (text->compare(0, kHeader.size(), kHeader) != 0 ||
      !base64Decode(b64, k.seed_.data(), k.seed_.size()))
    throw Error("{} is not a mesh-host node key; move it aside to make a new one", path);
  sodium_memzero(b64.data(), b64.size());
  k.derive();
  return k;
}

NodeKey NodeKey::loadOrCreate(const std::string& stateDir) {
  if (auto k = load(stateDir)) return std::move(*k);
  NodeKey k = ephemeral();
  std::string b64 = base64Encode(k.seed_.data(), k.seed_.size());
  std::string text = std::string(kHeader) + b64 + "\n";
  atomicWrite(layout::under(stateDir, layout::kNodeKey), text, 0600);
  sodium_memzero(text.data(), text.size());
  sodium_memzero(b64.data(), b64.size());
  return k;
}

std::string NodeKey::keyedDigest(const Secret& secret) const {
  unsigned char out[32];
  auto bytes = secret.exposeForWrite();
  crypto_generichash(out, sizeof out, reinterpret_cast<const unsigned char*>(bytes.data()),
                     bytes.size(), digestKey_.data(), digestKey_.size());
  return "keyed:" + toHex(out, sizeof out);
}

NodePublicKey NodeKey::publicKey() const {
  NodePublicKey k;
  k.box = boxPublic_;
  k.sign = signPublic_;
  return k;
}

std::string NodeKey::publicKeyText() const {
  return publicKey().text();
}

std::string NodeKey::sign(std::string_view bytes) const {
  std::array<unsigned char, crypto_sign_BYTES> sig{};
  crypto_sign_detached(sig.data(), nullptr, reinterpret_cast<const unsigned char*>(bytes.data()),
                       bytes.size(), signSecret_.data());
  return std::string(kSignaturePrefix) + base64Encode(sig.data(), sig.size());
}

std::optional<Secret> NodeKey::openSealed(const std::string& sealed) const {
  return std::move(openSealedWith(*this, sealed).secret);
}

bool NodeKey::openBox(const unsigned char* box, size_t size, unsigned char* out) const {
  if (size < crypto_box_SEALBYTES) return false;
  return crypto_box_seal_open(out, box, size, boxPublic_.data(), boxSecret_.data()) == 0;
}

std::string NodeKey::seal(const Secret& secret, const std::string& publicKeyText) {
  return sealToMany(secret, {publicKeyText});
}

}  // namespace mesh::trust
