// Content digests: "sha256:<64 hex>". A Digest is a validated value, held as its
// 32 raw bytes (text only for output: a cycle compares thousands of them); the
// empty Digest means "nothing" (no content known) and renders as "".
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

  bool empty() const { return !set_; }
  std::string hex() const;  // 64 lowercase hex characters; "" for none
  std::string str() const;  // "sha256:<hex>"; "" for none
  // A short form for human output: "sha256:0123456789ab".
  std::string shortStr() const;
  // Whether `text` is str(), compared without building it ("" is none).
  bool is(std::string_view text) const;
  const std::array<uint8_t, 32>& raw() const { return raw_; }

  bool operator==(const Digest&) const = default;

 private:
  std::array<uint8_t, 32> raw_{};
  bool set_ = false;
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
  // A field whose value is a digest: its text form, as add(key, d.str()).
  WantBuilder& add(std::string_view key, const Digest& d);
  Digest finish() const { return Digest::ofBytes(bytes()); }

 private:
  void put(std::string_view part);
  void append(std::string_view bytes);
  std::string_view bytes() const {
    return spill_.empty() ? std::string_view(inline_.data(), size_) : std::string_view(spill_);
  }
  // Hashed once: cheaper than many small updates. A want's fields (a few names,
  // modes and digests) fit on the stack; a longer one (a unit's text) spills.
  std::array<char, 384> inline_;
  size_t size_ = 0;
  std::string spill_;
};

std::string toHex(const unsigned char* data, size_t n);
// Writes 2n lowercase hex characters to `out`.
void toHex(const unsigned char* data, size_t n, char* out);

}  // namespace mesh
