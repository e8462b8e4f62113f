// Manifest::parse: the manifest's JSON read as a stream of events (nlohmann's SAX),
// each entry checked and kept as it ends. No document tree is built: a record of
// 100,000 entries costs the entries, not a JSON value of each (several times more).
// Accepts exactly what the document form accepted: an object with "version": 1 and
// "entries", an array of objects each valid as entryFromJson checked (unknown keys
// ignored, the last of a repeated key counts).
#include <algorithm>
#include <nlohmann/json.hpp>

#include "bundle/path.hh"
#include "bundle/unpack.hh"

namespace mesh::bundle {

namespace {

using nlohmann::json;

constexpr uint64_t kManifestVersion = 1;

// One entry's fields as they arrive; a field of the wrong type is as if missing.
struct Fields {
  std::optional<std::string> path, type, digest, target;
  std::optional<uint64_t> mode, size;
};

std::optional<Entry> entryOf(Fields& f) {
  if (!f.path || !f.type) return std::nullopt;
  Entry e;
  e.path = std::move(*f.path);
  // Only names in their normal form: anything else did not come from unpack().
  auto norm = normaliseEntryName(e.path);
  if (!std::holds_alternative<std::string>(norm) || std::get<std::string>(norm) != e.path ||
      e.path.empty())
    return std::nullopt;
  if (*f.type == "file")
    e.type = Entry::Type::File;
  else if (*f.type == "dir")
    e.type = Entry::Type::Directory;
  else if (*f.type == "link")
    e.type = Entry::Type::Symlink;
  else
    return std::nullopt;
  if (e.type != Entry::Type::Symlink) {
    if (!f.mode || *f.mode > 07777) return std::nullopt;
    e.mode = static_cast<mode_t>(*f.mode);
  }
  if (e.type == Entry::Type::File) {
    if (!f.size || !f.digest) return std::nullopt;
    e.size = *f.size;
    auto d = Digest::parse(*f.digest);
    if (!d) return std::nullopt;
    e.content = *d;
  }
  if (e.type == Entry::Type::Symlink) {
    if (!f.target || f.target->empty()) return std::nullopt;
    e.target = std::move(*f.target);
  }
  return e;
}

class Reader : public nlohmann::json_sax<json> {
 public:
  std::optional<Manifest> result() {
    if (failed_ || !version_ || !sawEntries_) return std::nullopt;
    return std::move(m_);
  }

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t v) override {
    return v >= 0 ? unsignedValue(static_cast<uint64_t>(v), false) : scalar();
  }
  bool number_unsigned(number_unsigned_t v) override { return unsignedValue(v, true); }
  bool number_float(number_float_t v, const string_t&) override {
    if (depth_ == 1 && key_ == "version") {
      version_ = v == static_cast<double>(kManifestVersion);
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
    if (depth_ == 2) fields_ = Fields{};
    ++depth_;
    return true;
  }
  bool end_object() override {
    if (skip_ > 0) return unnest();
    --depth_;
    if (depth_ == 2) {
      auto e = entryOf(fields_);
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
      version_ = v == kManifestVersion;
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
  Fields fields_;
  std::string key_;
  int depth_ = 0;    // 0 outside, 1 in the document, 2 in "entries", 3 in an entry
  size_t skip_ = 0;  // depth inside a value skipped whole
  bool version_ = false, sawEntries_ = false, failed_ = false;
};

}  // namespace

std::optional<Manifest> Manifest::parse(const std::string& text) {
  Reader reader;
  if (!json::sax_parse(text, &reader)) return std::nullopt;
  auto m = reader.result();
  if (!m) return std::nullopt;
  std::sort(m->entries.begin(), m->entries.end(),
            [](const Entry& a, const Entry& b) { return a.path < b.path; });
  auto dup = std::adjacent_find(m->entries.begin(), m->entries.end(),
                                [](const Entry& a, const Entry& b) { return a.path == b.path; });
  if (dup != m->entries.end()) return std::nullopt;
  return m;
}

}  // namespace mesh::bundle
