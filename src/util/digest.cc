#include "util/digest.hh"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <charconv>
#include <cstring>

#include "util/error.hh"
#include "util/fd.hh"
#include "util/fs.hh"

namespace mesh {

namespace {

// SHA-256 fetched once: EVP_sha256() makes OpenSSL look the algorithm up in its
// providers on every use, which costs more than hashing a small input.
const EVP_MD* sha256() {
  static const EVP_MD* md = [] {
    const EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return fetched ? fetched : EVP_sha256();
  }();
  return md;
}

// One context per thread, reused: a want digest is computed for every resource.
struct ReusedContext {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~ReusedContext() { EVP_MD_CTX_free(ctx); }
};

}  // namespace

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
  thread_local ReusedContext reused;
  std::array<uint8_t, 32> raw{};
  unsigned int n = 0;
  if (!reused.ctx || EVP_DigestInit_ex2(reused.ctx, sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(reused.ctx, bytes.data(), bytes.size()) != 1 ||
      EVP_DigestFinal_ex(reused.ctx, raw.data(), &n) != 1)
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

Hasher::Hasher() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex2(ctx_, sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(ctx_);
    throw Error("SHA-256 is not available");
  }
}

Hasher::~Hasher() {
  EVP_MD_CTX_free(ctx_);
}

void Hasher::update(std::string_view bytes) {
  if (EVP_DigestUpdate(ctx_, bytes.data(), bytes.size()) != 1) throw Error("SHA-256 failed");
}

Digest Hasher::finish() {
  std::array<uint8_t, 32> raw{};
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx_, raw.data(), &n) != 1) throw Error("SHA-256 failed");
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
