// The compiled form's bytes (decl/compiled.cc): how a form is written (Writer:
// LEB128 numbers, counted strings), read back with every length and value in
// bounds (Reader, from a form held whole or fetched in pieces as it is reached),
// and checksummed (XXH3-128). Internal to decl: compiled.cc frames a form,
// compiled_specs.cc writes and reads the declaration inside the frame.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "decl/compiled.hh"
#include "decl/model.hh"
#include "util/digest.hh"

// XXH3-128, header-only (no shared library): the form's checksum.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace mesh::decl::form {

class Writer {
 public:
  using Sink = std::function<void(std::string_view)>;
  Writer() = default;
  // What is written goes to `sink` a piece of about kPiece at a time (and at
  // flush()), never held whole.
  explicit Writer(Sink sink) : sink_(std::move(sink)) { out_.reserve(kPiece + 256); }

  void u(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
    if (out_.size() >= kPiece) spill();
  }
  void s(std::string_view v) {
    u(v.size());
    out_.append(v);
    if (out_.size() >= kPiece) spill();
  }
  // Hands what is held to the sink.
  void flush() {
    if (sink_ && !out_.empty()) spill();
  }
  void b(bool v) { u(v ? 1 : 0); }
  // Its 32 raw bytes after their count; none is a count of 0.
  void digest(const Digest& d) {
    if (d.empty()) return u(0);
    u(d.raw().size());
    out_.append(reinterpret_cast<const char*>(d.raw().data()), d.raw().size());
  }
  void optS(const std::optional<std::string>& v) {
    b(v.has_value());
    if (v) s(*v);
  }
  void principal(const std::optional<Principal>& p) {
    b(p.has_value());
    if (p) s(p->name);
  }
  void strings(const std::vector<std::string>& v) {
    u(v.size());
    for (const auto& x : v) s(x);
  }
  std::string& out() { return out_; }

 private:
  static constexpr size_t kPiece = size_t{1} << 20;
  void spill() {
    if (!sink_) return;
    sink_(out_);
    out_.clear();
  }
  Sink sink_;  // none: all of it held in out_
  std::string out_;
};

struct Malformed {};

// The form's checksum: XXH3-128 of everything before it, its 16 bytes in
// canonical (big-endian) order. Not a cryptographic hash, and it need not be:
// it guards against accidental damage (a torn write, a bad disk) of a store
// that only root can write; trust comes from the key (compiledKey, a SHA-256).
inline constexpr size_t kSum = sizeof(XXH128_canonical_t);

inline std::string sumText(XXH128_hash_t h) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  return std::string(reinterpret_cast<const char*>(c.digest), sizeof c.digest);
}

// The checksum of a form read in pieces.
class Checksum {
 public:
  Checksum() : state_(XXH3_createState()) {
    if (state_ == nullptr) throw std::bad_alloc();
    XXH3_128bits_reset(state_);
  }
  Checksum(const Checksum&) = delete;
  Checksum& operator=(const Checksum&) = delete;
  ~Checksum() { XXH3_freeState(state_); }
  void update(std::string_view bytes) { XXH3_128bits_update(state_, bytes.data(), bytes.size()); }
  std::string finish() const { return sumText(XXH3_128bits_digest(state_)); }

 private:
  XXH3_state_t* state_;
};

inline std::string checksumOf(std::string_view bytes) {
  return sumText(XXH3_128bits(bytes.data(), bytes.size()));
}

// Reads a form held whole (a view of it), or in pieces fetched as they are
// reached (FormSource: the form is not held whole, only a window of it), hashing
// each piece as it comes so that the caller can check the form's checksum at the end.
class Reader {
 public:
  explicit Reader(std::string_view in) : window_(in), size_(in.size()) {}
  // The `size` bytes of `source` from `base` on.
  Reader(const FormSource& source, size_t base, size_t size, Checksum& hasher)
      : source_(&source), hasher_(&hasher), base_(base), size_(size) {}

  uint64_t u() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const auto byte = static_cast<unsigned char>(next());
      v |= uint64_t{byte & 0x7fu} << shift;
      if (!(byte & 0x80)) return v;
    }
    throw Malformed{};
  }
  // Valid until the next read.
  std::string_view sv() {
    const uint64_t n = u();
    if (n > size_ - at_) throw Malformed{};
    return take(static_cast<size_t>(n));
  }
  std::string s() { return std::string(sv()); }
  bool b() {
    const uint64_t v = u();
    if (v > 1) throw Malformed{};
    return v == 1;
  }
  mode_t mode() {
    const uint64_t v = u();
    if (v > 07777) throw Malformed{};
    return static_cast<mode_t>(v);
  }
  int i() {
    const uint64_t v = u();
    if (v > 0x7fffffff) throw Malformed{};
    return static_cast<int>(v);
  }
  Digest digest() {
    const auto bytes = sv();
    if (bytes.empty()) return Digest::none();
    std::array<uint8_t, 32> raw;
    if (bytes.size() != raw.size()) throw Malformed{};
    std::memcpy(raw.data(), bytes.data(), raw.size());
    return Digest::fromRaw(raw);
  }
  std::optional<std::string> optS() {
    if (!b()) return std::nullopt;
    return s();
  }
  std::optional<Principal> principal() {
    if (!b()) return std::nullopt;
    return Principal{s()};
  }
  std::vector<std::string> strings() {
    const uint64_t n = count();
    std::vector<std::string> v;
    v.reserve(n);
    for (uint64_t k = 0; k < n; ++k) v.push_back(s());
    return v;
  }
  // A count of items that take at least a byte each.
  uint64_t count() {
    const uint64_t n = u();
    if (n > size_ - at_) throw Malformed{};
    return n;
  }
  bool done() const { return at_ == size_; }

 private:
  static constexpr size_t kPiece = 64 * 1024;

  char next() {
    if (at_ >= size_) throw Malformed{};
    if (pos_ == window_.size()) fetch();
    ++at_;
    return window_[pos_++];
  }
  // n bytes (n <= what is left): a view of the window when they lie in it.
  std::string_view take(size_t n) {
    if (n <= window_.size() - pos_) {
      const auto v = window_.substr(pos_, n);
      pos_ += n;
      at_ += n;
      return v;
    }
    scratch_.clear();
    scratch_.reserve(n);
    while (n > 0) {
      if (pos_ == window_.size()) fetch();
      const size_t k = std::min(n, window_.size() - pos_);
      scratch_.append(window_.substr(pos_, k));
      pos_ += k;
      at_ += k;
      n -= k;
    }
    return scratch_;
  }
  // The next piece (only of a FormSource: a form held whole is all in the window).
  void fetch() {
    const size_t n = std::min(kPiece, size_ - at_);
    if (source_ == nullptr || n == 0) throw Malformed{};
    piece_.resize(n);
    if (!source_->read(base_ + at_, piece_.data(), n)) throw Malformed{};
    hasher_->update(piece_);
    window_ = piece_;
    pos_ = 0;
  }

  const FormSource* source_ = nullptr;
  Checksum* hasher_ = nullptr;
  std::string_view window_;  // what is held of the form, from at_ - pos_
  std::string piece_, scratch_;
  size_t base_ = 0;  // where in the source the bytes read start
  size_t size_ = 0;  // how many there are
  size_t at_ = 0;    // in the payload
  size_t pos_ = 0;   // in the window
};

// The declaration inside the frame (compiled_specs.cc): its resources, each
// kind's spec by its codec row, and each resource's want.
void writeDeclaration(Writer& w, const Declaration& d);
Declaration readDeclaration(Reader& r);

}  // namespace mesh::decl::form
