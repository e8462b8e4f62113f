#include "util/digest.hh"

// SHA-256 through OpenSSL's SHA256_* functions rather than EVP: the same code
// (the CPU's SHA extensions where present), without EVP's providers — fetching
// SHA-256 through them initialises OpenSSL's whole algorithm registry, ~2 MiB
// resident and a millisecond at every start. Deprecated in OpenSSL 3.0, not removed.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <fcntl.h>
#include <openssl/sha.h>
#include <unistd.h>

#include <charconv>
#include <cstring>

#include "util/error.hh"
#include "util/fd.hh"
#include "util/fs.hh"

namespace mesh {

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
  // A table, not a branch per character: every record's digests are parsed each cycle.
  static constexpr auto kLowerHex = [] {
    std::array<bool, 256> t{};
    for (char c = '0'; c <= '9'; ++c) t[static_cast<unsigned char>(c)] = true;
    for (char c = 'a'; c <= 'f'; ++c) t[static_cast<unsigned char>(c)] = true;
    return t;
  }();
  bool ok = true;
  for (char c : hex) ok &= kLowerHex[static_cast<unsigned char>(c)];
  if (!ok) return std::nullopt;
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
  SHA256_CTX ctx;
  std::array<uint8_t, 32> raw{};
  if (SHA256_Init(&ctx) != 1 || SHA256_Update(&ctx, bytes.data(), bytes.size()) != 1 ||
      SHA256_Final(raw.data(), &ctx) != 1)
    throw Error("SHA-256 failed");
  return Digest::fromRaw(raw);
}

Digest Digest::ofFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) throwSys(fmt::format("cannot read {}", path));
  return ofFd(fd.get(), path);
}

Digest Digest::ofFd(int fd, const std::string& shown) {
  Hasher h;
  readChunks(fd, shown, [&](std::string_view chunk) { h.update(chunk); });
  return h.finish();
}

Hasher::Hasher() : ctx_(new SHA256_CTX) {
  if (SHA256_Init(ctx_) != 1) {
    delete ctx_;
    throw Error("SHA-256 is not available");
  }
}

Hasher::~Hasher() {
  delete ctx_;
}

void Hasher::update(std::string_view bytes) {
  if (SHA256_Update(ctx_, bytes.data(), bytes.size()) != 1) throw Error("SHA-256 failed");
}

Digest Hasher::finish() {
  std::array<uint8_t, 32> raw{};
  if (SHA256_Final(raw.data(), ctx_) != 1) throw Error("SHA-256 failed");
  return Digest::fromRaw(raw);
}

WantBuilder::WantBuilder(std::string_view scheme) {
  add("scheme", scheme);
}

void WantBuilder::put(std::string_view part) {
  char len[24];
  auto [end, ec] = std::to_chars(len, len + sizeof len, part.size());
  (void)ec;
  buf_.append(len, end);
  buf_ += ':';
  buf_.append(part);
}

WantBuilder& WantBuilder::add(std::string_view key, std::string_view value) {
  put(key);
  put(value);
  return *this;
}

}  // namespace mesh
