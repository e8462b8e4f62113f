#include "util/digest.hh"

#include <fcntl.h>
#include <sodium.h>
#include <unistd.h>

#include <cstring>

#include "util/error.hh"
#include "util/fd.hh"

namespace mesh {

static_assert(sizeof(crypto_hash_sha256_state) <= 256);

std::string toHex(const unsigned char* data, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out(n * 2, '\0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[data[i] >> 4];
    out[2 * i + 1] = digits[data[i] & 15];
  }
  return out;
}

std::optional<Digest> Digest::parse(std::string_view text) {
  constexpr std::string_view prefix = "sha256:";
  if (text.substr(0, prefix.size()) != prefix) return std::nullopt;
  auto hex = text.substr(prefix.size());
  if (hex.size() != 64) return std::nullopt;
  for (char c : hex)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
  Digest d;
  d.hex_ = std::string(hex);
  return d;
}

Digest Digest::fromRaw(const std::array<uint8_t, 32>& raw) {
  Digest d;
  d.hex_ = toHex(raw.data(), raw.size());
  return d;
}

Digest Digest::ofBytes(std::string_view bytes) {
  Hasher h;
  h.update(bytes);
  return h.finish();
}

Digest Digest::ofFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) throwSys(fmt::format("cannot read {}", path));
  Hasher h;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throwSys(fmt::format("cannot read {}", path));
    }
    if (n == 0) break;
    h.update(std::string_view(buf, static_cast<size_t>(n)));
  }
  return h.finish();
}

Hasher::Hasher() {
  static_assert(alignof(crypto_hash_sha256_state) <= 64);
  crypto_hash_sha256_init(reinterpret_cast<crypto_hash_sha256_state*>(state_));
}

void Hasher::update(std::string_view bytes) {
  crypto_hash_sha256_update(reinterpret_cast<crypto_hash_sha256_state*>(state_),
                            reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

Digest Hasher::finish() {
  std::array<uint8_t, 32> raw{};
  crypto_hash_sha256_final(reinterpret_cast<crypto_hash_sha256_state*>(state_), raw.data());
  return Digest::fromRaw(raw);
}

WantBuilder::WantBuilder(std::string_view scheme) {
  add("scheme", scheme);
}

WantBuilder& WantBuilder::add(std::string_view key, std::string_view value) {
  for (auto part : {key, value}) {
    auto n = std::to_string(part.size());
    h_.update(n);
    h_.update(":");
    h_.update(part);
  }
  return *this;
}

}  // namespace mesh
