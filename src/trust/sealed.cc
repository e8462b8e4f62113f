#include "trust/sealed.hh"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "trust/node_key.hh"
#include "util/base64.hh"
#include "util/error.hh"

namespace mesh::trust {

namespace {

constexpr std::string_view kPublicPrefix = "mesh-node:";
constexpr std::string_view kV1Prefix = "sealed:";
constexpr std::string_view kV2Prefix = "sealed:v2:";
constexpr std::size_t kNonce = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
constexpr std::size_t kTag = crypto_aead_xchacha20poly1305_ietf_ABYTES;
static_assert(crypto_aead_xchacha20poly1305_ietf_KEYBYTES == 32);

const unsigned char* u(const char* p) {
  return reinterpret_cast<const unsigned char*>(p);
}
unsigned char* u(char* p) {
  return reinterpret_cast<unsigned char*>(p);
}

// The associated data: the text's prefix (with the count) and every wrap.
std::string associated(std::string_view prefix, std::string_view wraps) {
  std::string ad(prefix);
  ad.append(wraps);
  return ad;
}

}  // namespace

std::vector<unsigned char> sealingKeyOf(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  auto pub = text.substr(0, kPublicPrefix.size()) == kPublicPrefix
                 ? base64Decode(text.substr(kPublicPrefix.size()), " \t\r\n")
                 : std::nullopt;
  // The full key (sealing and signing halves, 64 bytes) or, as older versions
  // printed it, the sealing half alone: the first 32 bytes either way.
  if (!pub || (pub->size() != crypto_box_PUBLICKEYBYTES && pub->size() != 64))
    throw InputError(
        "'{}' is not a node's public key; it looks like mesh-node:<base64> "
        "(mesh-host key show on that node)",
        text);
  return {pub->begin(), pub->begin() + crypto_box_PUBLICKEYBYTES};
}

std::string sealToMany(const Secret& secret, const std::vector<std::string>& publicKeyTexts) {
  if (publicKeyTexts.empty())
    throw InputError("seal: no recipient; give --to KEY (repeatable) or --nodes");
  if (publicKeyTexts.size() > kMaxRecipients)
    throw InputError("seal: {} recipients; one sealed value holds at most {}",
                     publicKeyTexts.size(), kMaxRecipients);
  std::vector<std::vector<unsigned char>> keys;
  for (const auto& text : publicKeyTexts) {
    auto k = sealingKeyOf(text);
    if (std::find(keys.begin(), keys.end(), k) != keys.end())
      throw InputError("seal: the key {} is given twice; give each recipient once", text);
    keys.push_back(std::move(k));
  }
  // The wraps' order says nothing of the order the keys were given in.
  for (std::size_t i = keys.size(); i > 1; --i)
    std::swap(keys[i - 1], keys[randombytes_uniform(static_cast<uint32_t>(i))]);

  std::string dataKey(32, '\0');
  crypto_aead_xchacha20poly1305_ietf_keygen(u(dataKey.data()));
  std::string wraps(keys.size() * kWrapBytes, '\0');
  for (std::size_t i = 0; i < keys.size(); ++i)
    crypto_box_seal(u(wraps.data() + i * kWrapBytes), u(dataKey.data()), dataKey.size(),
                    keys[i].data());
  const std::string prefix = fmt::format("{}{}:", kV2Prefix, keys.size());
  const std::string ad = associated(prefix, wraps);
  std::string nonce(kNonce, '\0');
  randombytes_buf(nonce.data(), nonce.size());
  const auto plain = secret.exposeForWrite();
  std::string cipher(plain.size() + kTag, '\0');
  unsigned long long written = 0;
  crypto_aead_xchacha20poly1305_ietf_encrypt(u(cipher.data()), &written, u(plain.data()),
                                             plain.size(), u(ad.data()), ad.size(), nullptr,
                                             u(nonce.data()), u(dataKey.data()));
  sodium_memzero(dataKey.data(), dataKey.size());
  cipher.resize(written);
  return prefix + base64Encode(wraps + nonce + cipher);
}

OpenedSealed openSealedWith(const NodeKey& key, std::string_view text) {
  OpenedSealed out;
  if (!text.starts_with(kV2Prefix)) {
    if (!text.starts_with(kV1Prefix)) return out;
    out.recipients = 1;
    auto box = base64Decode(text.substr(kV1Prefix.size()), " \t\r\n");
    if (!box || box->size() < crypto_box_SEALBYTES) return out;
    out.result = OpenedSealed::Result::NotForThisKey;
    std::string plain(box->size() - crypto_box_SEALBYTES, '\0');
    if (!key.openBox(u(box->data()), box->size(), u(plain.data()))) return out;
    out.secret.emplace(std::move(plain));
    out.result = OpenedSealed::Result::Opened;
    return out;
  }
  // sealed:v2:<N>:<base64>
  const auto rest = text.substr(kV2Prefix.size());
  const auto colon = rest.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 5) return out;
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + colon, n);
  if (ec != std::errc() || end != rest.data() + colon || n == 0 || n > kMaxRecipients ||
      rest[0] == '0')
    return out;
  const auto bytes = base64Decode(rest.substr(colon + 1), " \t\r\n");
  if (!bytes || bytes->size() < n * kWrapBytes + kNonce + kTag) return out;
  out.recipients = n;
  const std::string_view all(*bytes);
  const auto wraps = all.substr(0, n * kWrapBytes);
  const auto nonce = all.substr(n * kWrapBytes, kNonce);
  const auto cipher = all.substr(n * kWrapBytes + kNonce);
  std::string dataKey(32, '\0');
  bool wrapped = false;
  for (std::size_t i = 0; i < n && !wrapped; ++i)
    wrapped = key.openBox(u(wraps.data() + i * kWrapBytes), kWrapBytes, u(dataKey.data()));
  if (!wrapped) {
    out.result = OpenedSealed::Result::NotARecipient;
    return out;
  }
  const std::string ad = associated(text.substr(0, kV2Prefix.size() + colon + 1), wraps);
  std::string plain(cipher.size() - kTag, '\0');
  unsigned long long got = 0;
  const int rc = crypto_aead_xchacha20poly1305_ietf_decrypt(
      u(plain.data()), &got, nullptr, u(cipher.data()), cipher.size(), u(ad.data()), ad.size(),
      u(nonce.data()), u(dataKey.data()));
  sodium_memzero(dataKey.data(), dataKey.size());
  if (rc != 0) {
    sodium_memzero(plain.data(), plain.size());
    out.result = OpenedSealed::Result::Damaged;
    return out;
  }
  plain.resize(got);
  out.secret.emplace(std::move(plain));
  out.result = OpenedSealed::Result::Opened;
  return out;
}

}  // namespace mesh::trust
