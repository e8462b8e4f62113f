// Content digests: "sha256:<64 hex>". A Digest is a validated value; the empty
// Digest means "nothing" (no content known) and renders as "".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct SHA256state_st;  // OpenSSL's SHA256_CTX

namespace mesh {

class Digest {
 public:
  Digest() = default;  // none
  static Digest none() { return {}; }
  // Parses "sha256:<64 lowercase hex>"; nullopt when malformed.
  [[nodiscard]] static std::optional<Digest> parse(std::string_view text);
  static Digest ofBytes(std::string_view bytes);
  // Hashes a file's content; throws SysError when it cannot be read.
  static Digest ofFile(const std::string& path);
  // Of an open file, read from its current offset to the end; `shown` names it in errors.
  static Digest ofFd(int fd, const std::string& shown);
  static Digest fromRaw(const std::array<uint8_t, 32>& raw);

  bool empty() const { return hex_.empty(); }
  const std::string& hex() const { return hex_; }
  std::string str() const { return hex_.empty() ? std::string() : "sha256:" + hex_; }
  // A short form for human output: "sha256:0123456789ab".
  std::string shortStr() const { return hex_.empty() ? "-" : "sha256:" + hex_.substr(0, 12); }

  bool operator==(const Digest&) const = default;

 private:
  std::string hex_;
};

// Streaming SHA-256 (OpenSSL: uses the CPU's SHA extensions where present).
class Hasher {
 public:
  Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  ~Hasher();
  void update(std::string_view bytes);
  Digest finish();

 private:
  ::SHA256state_st* ctx_;
};

// Builds a want digest from labelled fields; every field is length-prefixed so
// ("ab","c") and ("a","bc") differ. The first field should be the scheme name
// and version (e.g. "file/1") so a change of scheme changes every want.
class WantBuilder {
 public:
  explicit WantBuilder(std::string_view scheme);
  WantBuilder& add(std::string_view key, std::string_view value);
  Digest finish() const { return Digest::ofBytes(buf_); }

 private:
  void put(std::string_view part);
  std::string buf_;  // hashed once: cheaper than many small updates
};

std::string toHex(const unsigned char* data, size_t n);

}  // namespace mesh
