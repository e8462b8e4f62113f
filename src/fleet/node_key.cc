#include "fleet/node_key.hh"

#include <sodium.h>

#include "util/digest.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::fleet {

namespace {
constexpr std::string_view kHeader = "mesh-host node key v1\n";
constexpr char kDigestContext[crypto_kdf_CONTEXTBYTES + 1] = "meshdgst";
}  // namespace

void NodeKey::derive() {
  static_assert(crypto_kdf_KEYBYTES == 32);
  crypto_kdf_derive_from_key(digestKey_.data(), digestKey_.size(), 1, kDigestContext, seed_.data());
}

NodeKey NodeKey::ephemeral() {
  NodeKey k;
  randombytes_buf(k.seed_.data(), k.seed_.size());
  k.derive();
  return k;
}

std::optional<NodeKey> NodeKey::load(const std::string& stateDir) {
  const auto path = stateDir + "/node.key";
  auto text = readFile(path);
  if (!text) return std::nullopt;
  NodeKey k;
  size_t binLen = 0;
  auto b64 = text->substr(std::min(text->size(), kHeader.size()));
  while (!b64.empty() && (b64.back() == '\n' || b64.back() == ' ')) b64.pop_back();
  if (text->compare(0, kHeader.size(), kHeader) != 0 ||
      sodium_base642bin(k.seed_.data(), k.seed_.size(), b64.data(), b64.size(), nullptr, &binLen,
                        nullptr, sodium_base64_VARIANT_ORIGINAL) != 0 ||
      binLen != k.seed_.size())
    throw Error("{} is not a mesh-host node key; move it aside to make a new one", path);
  sodium_memzero(b64.data(), b64.size());
  k.derive();
  return k;
}

NodeKey NodeKey::loadOrCreate(const std::string& stateDir) {
  if (auto k = load(stateDir)) return std::move(*k);
  NodeKey k = ephemeral();
  char b64[sodium_base64_ENCODED_LEN(32, sodium_base64_VARIANT_ORIGINAL)];
  sodium_bin2base64(b64, sizeof b64, k.seed_.data(), k.seed_.size(),
                    sodium_base64_VARIANT_ORIGINAL);
  std::string text = std::string(kHeader) + b64 + "\n";
  atomicWrite(stateDir + "/node.key", text, 0600);
  sodium_memzero(text.data(), text.size());
  sodium_memzero(b64, sizeof b64);
  return k;
}

std::string NodeKey::keyedDigest(const Secret& secret) const {
  unsigned char out[32];
  auto bytes = secret.exposeForWrite();
  crypto_generichash(out, sizeof out, reinterpret_cast<const unsigned char*>(bytes.data()),
                     bytes.size(), digestKey_.data(), digestKey_.size());
  return "keyed:" + toHex(out, sizeof out);
}

}  // namespace mesh::fleet
