// ManifestReader: a manifest's JSON ({"entries": [...], "version": 1}, the form
// Manifest::str() writes) read as a stream of nlohmann SAX events, each entry
// checked and kept as it ends. Manifest::parse feeds it a whole text; a record
// holding a manifest as one of its values (apply/kinds/tree.hh) forwards it that
// value's events, so the manifest's text is never held as a string of its own.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "bundle/unpack.hh"

namespace mesh::bundle {

namespace detail {

// One entry's fields as they arrive; a field of the wrong type is as if missing.
struct Fields {
  std::optional<std::string> path, type, digest, target;
  std::optional<uint64_t> mode, size;
};

std::optional<Entry> entryOf(Fields& f);

}  // namespace detail

class ManifestReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  // The manifest, once every event of its document was heard: sorted by path;
  // nullopt when malformed (a duplicate path included).
  std::optional<Manifest> result();
  // Room for `n` entries at once, when the caller knows how many come: no vector
  // growing by doubling (a moment with both the old and the new).
  void reserve(size_t n) { m_.entries.reserve(n); }

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t v) override {
    return v >= 0 ? unsignedValue(static_cast<uint64_t>(v), false) : scalar();
  }
  bool number_unsigned(number_unsigned_t v) override { return unsignedValue(v, true); }
  bool number_float(number_float_t v, const string_t&) override {
    if (depth_ == 1 && key_ == "version") {
      version_ = v == static_cast<double>(kVersion);
      return version_ || fail();
    }
    return scalar();
  }
  bool string(string_t& s) override {
    if (depth_ == 3) {
      if (key_ == "path") return set(fields_.path, std::move(s));
      if (key_ == "type") return set(fields_.type, std::move(s));
      if (key_ == "digest") return set(fields_.digest, std::move(s));
      if (key_ == "target") return set(fields_.target, std::move(s));
    }
    return scalar();
  }
  bool binary(binary_t&) override { return scalar(); }

  bool start_object(std::size_t) override {
    if (skip_ > 0 || (depth_ != 0 && depth_ != 2)) return nest();
    if (depth_ == 2) fields_ = detail::Fields{};
    ++depth_;
    return true;
  }
  bool end_object() override {
    if (skip_ > 0) return unnest();
    --depth_;
    if (depth_ == 2) {
      auto e = detail::entryOf(fields_);
      if (!e) return fail();
      m_.entries.push_back(std::move(*e));
    }
    return true;
  }
  bool start_array(std::size_t) override {
    if (skip_ == 0 && depth_ == 1 && key_ == "entries") {
      sawEntries_ = true;
      depth_ = 2;
      return true;
    }
    if (depth_ == 0) return fail();  // the document is not an object
    return nest();
  }
  bool end_array() override {
    if (skip_ > 0) return unnest();
    depth_ = 1;  // the end of "entries"
    return true;
  }
  bool key(string_t& k) override {
    if (skip_ == 0) key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return fail();
  }

 private:
  static constexpr uint64_t kVersion = 1;
  bool fail() {
    failed_ = true;
    return false;  // stops the parse
  }
  // A value that is not an entry's field, nor the version, nor an object or array.
  bool scalar() {
    if (skip_ > 0) return true;
    if (depth_ == 0) return fail();  // the document is not an object
    if (depth_ == 2) return fail();  // an entry that is not an object
    if (depth_ == 1 && key_ == "version") return fail();
    if (depth_ == 1 && key_ == "entries") return fail();  // not an array
    if (depth_ == 3) markIfKnown();
    return true;
  }
  bool unsignedValue(uint64_t v, bool isUnsigned) {
    if (skip_ > 0) return true;
    if (depth_ == 1 && key_ == "version") {
      version_ = v == kVersion;
      return version_ || fail();
    }
    if (depth_ == 3 && isUnsigned && key_ == "mode") return set(fields_.mode, v);
    if (depth_ == 3 && isUnsigned && key_ == "size") return set(fields_.size, v);
    return scalar();
  }
  template <typename T>
  bool set(std::optional<T>& field, T v) {
    if (skip_ > 0) return true;
    field = std::move(v);
    return true;
  }
  // An object or array where none is read: skipped whole; a known field holding
  // one is of the wrong type.
  bool nest() {
    if (skip_ == 0) {
      if (depth_ == 2) return fail();  // an entry that is not an object
      if (depth_ == 1 && (key_ == "version" || key_ == "entries")) return fail();
      if (depth_ == 3) markIfKnown();
    }
    ++skip_;
    return true;
  }
  bool unnest() {
    --skip_;
    return true;
  }
  // A known field of the wrong type: as if missing (the last value of a repeated
  // key counts, as in the document form).
  void markIfKnown() {
    if (key_ == "path") fields_.path.reset();
    if (key_ == "type") fields_.type.reset();
    if (key_ == "digest") fields_.digest.reset();
    if (key_ == "target") fields_.target.reset();
    if (key_ == "mode") fields_.mode.reset();
    if (key_ == "size") fields_.size.reset();
  }

  Manifest m_;
  detail::Fields fields_;
  std::string key_;
  int depth_ = 0;    // 0 outside, 1 in the document, 2 in "entries", 3 in an entry
  size_t skip_ = 0;  // depth inside a value skipped whole
  bool version_ = false, sawEntries_ = false, failed_ = false;
};

}  // namespace mesh::bundle
