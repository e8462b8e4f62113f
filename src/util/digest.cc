#include "util/digest.hh"

// SHA-256 through OpenSSL's SHA256_* functions rather than EVP: the same code
// (the CPU's SHA extensions where present), without EVP's providers — fetching
// SHA-256 through them initialises OpenSSL's whole algorithm registry, ~2 MiB
// resident and a millisecond at every start. Deprecated in OpenSSL 3.0, not removed.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <fcntl.h>
#include <openssl/sha.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "util/error.hh"
#include "util/fd.hh"
#include "util/fs.hh"

namespace mesh {

void toHex(const unsigned char* data, size_t n, char* out) {
  // Both digits of a byte at once: a cycle renders a digest per resource.
  static constexpr auto kPairs = [] {
    constexpr char digits[] = "0123456789abcdef";
    std::array<char, 512> t{};
    for (size_t b = 0; b < 256; ++b) {
      t[2 * b] = digits[b >> 4];
      t[2 * b + 1] = digits[b & 15];
    }
    return t;
  }();
  for (size_t i = 0; i < n; ++i) std::memcpy(out + 2 * i, &kPairs[2 * size_t{data[i]}], 2);
}

std::string toHex(const unsigned char* data, size_t n) {
  std::string out(n * 2, '\0');
  toHex(data, n, out.data());
  return out;
}

namespace {

constexpr std::string_view kPrefix = "sha256:";

// The value of a lowercase hex digit; -1 for any other character.
constexpr auto kHexValue = [] {
  std::array<int8_t, 256> t{};
  t.fill(-1);
  for (int c = '0'; c <= '9'; ++c) t[c] = static_cast<int8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c) t[c] = static_cast<int8_t>(c - 'a' + 10);
  return t;
}();

}  // namespace

std::string Digest::hex() const {
  return set_ ? toHex(raw_.data(), raw_.size()) : std::string();
}

std::string Digest::str() const {
  if (!set_) return {};
  std::string out(kPrefix.size() + 64, '\0');
  std::copy(kPrefix.begin(), kPrefix.end(), out.begin());
  toHex(raw_.data(), raw_.size(), out.data() + kPrefix.size());
  return out;
}

std::string Digest::shortStr() const {
  return set_ ? str().substr(0, kPrefix.size() + 12) : "-";
}

bool Digest::is(std::string_view text) const {
  if (!set_) return text.empty();
  if (text.size() != kPrefix.size() + 64 || text.substr(0, kPrefix.size()) != kPrefix) return false;
  char hex[64];
  toHex(raw_.data(), raw_.size(), hex);
  return text.substr(kPrefix.size()) == std::string_view(hex, sizeof hex);
}

std::optional<Digest> Digest::parse(std::string_view text) {
  if (text.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  auto hex = text.substr(kPrefix.size());
  if (hex.size() != 64) return std::nullopt;
  // A table, not a branch per character: every record's digests are parsed each cycle.
  Digest d;
  int bad = 0;
  for (size_t i = 0; i < d.raw_.size(); ++i) {
    const int hi = kHexValue[static_cast<unsigned char>(hex[2 * i])];
    const int lo = kHexValue[static_cast<unsigned char>(hex[2 * i + 1])];
    bad |= hi | lo;  // negative when either is not a lowercase hex digit
    d.raw_[i] = static_cast<uint8_t>((hi << 4) | (lo & 15));
  }
  if (bad < 0) return std::nullopt;
  d.set_ = true;
  return d;
}

Digest Digest::fromRaw(const std::array<uint8_t, 32>& raw) {
  Digest d;
  d.raw_ = raw;
  d.set_ = true;
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

void WantBuilder::append(std::string_view bytes) {
  if (spill_.empty() && size_ + bytes.size() <= inline_.size()) {
    std::copy(bytes.begin(), bytes.end(), inline_.data() + size_);
    size_ += bytes.size();
    return;
  }
  if (spill_.empty()) spill_.assign(inline_.data(), size_);
  spill_.append(bytes);
}

void WantBuilder::put(std::string_view part) {
  char len[24];
  auto [end, ec] = std::to_chars(len, len + sizeof len - 1, part.size());
  (void)ec;
  *end++ = ':';
  append(std::string_view(len, static_cast<size_t>(end - len)));
  append(part);
}

WantBuilder& WantBuilder::add(std::string_view key, const Digest& d) {
  if (d.empty()) return add(key, std::string_view());
  char text[kPrefix.size() + 64];
  std::copy(kPrefix.begin(), kPrefix.end(), text);
  toHex(d.raw().data(), d.raw().size(), text + kPrefix.size());
  return add(key, std::string_view(text, sizeof text));
}

WantBuilder& WantBuilder::add(std::string_view key, std::string_view value) {
  put(key);
  put(value);
  return *this;
}

}  // namespace mesh
