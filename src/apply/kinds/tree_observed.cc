// TreeObserved's text form in the state store, written and read without building
// a JSON document (for a tree of 100,000 files that document cost several times
// the record: the no-op of such an archive peaked at 231–259 MiB):
//
//   {"entries": N, "fingerprints": [[index, "<Fingerprint::str()>"], …],
//    "manifest": {"entries": [...], "version": 1}, "version": 2}
//
// a fingerprint keyed by its file's index in the manifest's entries, the manifest
// inline, so reading it holds no second copy of its text; N, the manifest's
// entries, first so that room for them is made once. The form before
// (version 1: no "version", fingerprints keyed by path, the manifest as one JSON
// string) is still read, and marked `legacy` so that it is written again.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "apply/kinds/tree.hh"
#include "bundle/manifest_reader.hh"

namespace mesh::apply {

using json = nlohmann::json;

namespace {

constexpr uint64_t kVersion = 2;

// TreeObserved's text read as a stream of events, the manifest's handed on to a
// bundle::ManifestReader as they come. No document tree, no manifest text.
class ObservedReader : public nlohmann::json_sax<json> {
 public:
  explicit ObservedReader(size_t textSize) : textSize_(textSize) {}

  // The fingerprints as read, before they are checked against the manifest: by
  // index (version 2) or by path (version 1).
  std::vector<std::pair<uint32_t, Fingerprint>> byIndex;
  std::vector<std::pair<std::string, Fingerprint>> byPath;
  std::optional<bundle::Manifest> manifest;
  bool sawVersion2 = false;

  bool complete() const { return !failed_ && sawManifest_ && sawFingerprints_ && depth_ == 0; }

  bool null() override {
    if (inManifest()) return manifest_.null();
    if (skip_ == 0 && depth_ == 1 && key_ == "fingerprints") {  // none, in the document form
      sawFingerprints_ = true;
      return true;
    }
    return other();
  }
  bool boolean(bool v) override { return inManifest() ? manifest_.boolean(v) : other(); }
  bool number_integer(number_integer_t v) override {
    if (inManifest()) return manifest_.number_integer(v);
    return v >= 0 ? number_unsigned(static_cast<number_unsigned_t>(v)) : other();
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (inManifest()) return manifest_.number_unsigned(v);
    if (skip_ == 0 && depth_ == 1 && key_ == "version") {
      sawVersion2 = v == kVersion;
      return sawVersion2 || fail();
    }
    if (skip_ == 0 && depth_ == 1 && key_ == "entries") {
      // Room made once, never more than the text could describe (an entry takes
      // more than 32 bytes of it): a damaged count costs nothing.
      const size_t n = std::min<size_t>(v, textSize_ / 32);
      manifest_.reserve(n);
      byIndex.reserve(n);
      return true;
    }
    if (skip_ == 0 && depth_ == 3 && pair_ == 0) {
      if (v > UINT32_MAX) return fail();
      index_ = static_cast<uint32_t>(v);
      byIndexPair_ = true;
      ++pair_;
      return true;
    }
    return other();
  }
  bool number_float(number_float_t v, const string_t& s) override {
    return inManifest() ? manifest_.number_float(v, s) : other();
  }
  bool binary(binary_t& b) override { return inManifest() ? manifest_.binary(b) : other(); }
  bool string(string_t& s) override {
    if (inManifest()) return manifest_.string(s);
    if (skip_ > 0) return true;
    if (depth_ == 1 && key_ == "manifest") {  // version 1: the manifest as a string
      sawManifest_ = true;
      manifest = bundle::Manifest::parse(s);
      return manifest.has_value() || fail();
    }
    if (depth_ == 3) {
      if (pair_ == 0) {
        path_ = std::move(s);
        byIndexPair_ = false;
      }
      if (pair_ == 1) {
        const auto f = Fingerprint::parse(s);
        if (!f) return fail();
        if (byIndexPair_)
          byIndex.emplace_back(index_, *f);
        else
          byPath.emplace_back(std::move(path_), *f);
      }
      ++pair_;
      return true;
    }
    return other();
  }
  bool start_object(std::size_t n) override {
    if (inManifest()) {
      ++manifestDepth_;
      return manifest_.start_object(n);
    }
    if (skip_ == 0 && depth_ == 1 && key_ == "manifest") {
      sawManifest_ = true;
      manifestDepth_ = 1;
      return manifest_.start_object(n);
    }
    if (skip_ > 0 || depth_ != 0) return nest();
    depth_ = 1;
    return true;
  }
  bool end_object() override {
    if (inManifest()) {
      if (!manifest_.end_object()) return fail();
      if (--manifestDepth_ == 0) {
        manifest = manifest_.result();
        if (!manifest) return fail();
      }
      return true;
    }
    if (skip_ > 0) return unnest();
    depth_ = 0;
    return true;
  }
  bool start_array(std::size_t n) override {
    if (inManifest()) {
      ++manifestDepth_;
      return manifest_.start_array(n);
    }
    if (skip_ == 0 && depth_ == 1 && key_ == "fingerprints") {
      sawFingerprints_ = true;
      depth_ = 2;
      return true;
    }
    if (skip_ == 0 && depth_ == 2) {
      depth_ = 3;
      pair_ = 0;
      return true;
    }
    return nest();
  }
  bool end_array() override {
    if (inManifest()) {
      --manifestDepth_;
      return manifest_.end_array();
    }
    if (skip_ > 0) return unnest();
    if (depth_ == 3 && pair_ < 2) return fail();  // [path] alone
    --depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (inManifest()) return manifest_.key(k);
    if (skip_ == 0) key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return fail();
  }

 private:
  bool inManifest() const { return manifestDepth_ > 0; }
  bool fail() {
    failed_ = true;
    return false;
  }
  // A value that is neither the manifest, nor a fingerprint's part, nor the version.
  bool other() {
    if (skip_ > 0) return true;
    if (depth_ == 0 || depth_ == 2) return fail();  // not an object; a pair not an array
    if (depth_ == 3) return pair_ < 2 ? fail() : (++pair_, true);  // extra elements count not
    if (key_ == "manifest" || key_ == "fingerprints" || key_ == "version") return fail();
    return true;
  }
  bool nest() {
    if (skip_ == 0) {
      if (depth_ == 2) return fail();
      if (depth_ == 3 && pair_ < 2) return fail();
      if (depth_ == 1 && (key_ == "manifest" || key_ == "fingerprints" || key_ == "version"))
        return fail();
    }
    ++skip_;
    return true;
  }
  bool unnest() {
    --skip_;
    if (skip_ == 0 && depth_ == 3) ++pair_;
    return true;
  }

  bundle::ManifestReader manifest_;
  size_t manifestDepth_ = 0;  // > 0: inside the inline manifest, its events handed on
  std::string key_, path_;
  size_t textSize_;
  uint32_t index_ = 0;
  bool byIndexPair_ = false;
  int depth_ = 0;  // 0 outside, 1 in the object, 2 in "fingerprints", 3 in a pair
  int pair_ = 0;   // values seen in the pair
  size_t skip_ = 0;
  bool sawManifest_ = false, sawFingerprints_ = false, failed_ = false;
};

const bundle::Entry* fileAt(const bundle::Manifest& m, uint64_t index) {
  return index < m.entries.size() && m.entries[index].type == bundle::Entry::Type::File
             ? &m.entries[index]
             : nullptr;
}

}  // namespace

// Written as jsonData would write the document (keys sorted), without building it.
std::string TreeObserved::str() const {
  if (!manifest) return {};
  std::string out = fmt::format("{{\"entries\":{},\"fingerprints\":[", manifest->entries.size());
  char text[Fingerprint::kMaxText];
  bool first = true;
  for (const auto& [index, f] : cache.fingerprints) {
    out += first ? "[" : ",[";
    first = false;
    out += std::to_string(index);
    out += ",\"";
    out.append(text, f.write(text));  // digits and colons: no escapes
    out += "\"]";
  }
  out += "],\"manifest\":";
  out += manifest->str();
  out += fmt::format(",\"version\":{}}}", kVersion);
  return out;
}

TreeObserved TreeObserved::parse(std::string_view text) {
  ObservedReader reader(text.size());
  if (!json::sax_parse(text, &reader) || !reader.complete() || !reader.manifest) return {};
  TreeObserved o;
  o.manifest = std::move(reader.manifest);
  const auto& entries = o.manifest->entries;
  auto& fps = o.cache.fingerprints;
  if (reader.sawVersion2) {
    if (!reader.byPath.empty()) return {};
    fps = std::move(reader.byIndex);
    for (size_t i = 0; i < fps.size(); ++i)  // ascending, each a file's: else not written here
      if (!fileAt(*o.manifest, fps[i].first) || (i > 0 && fps[i - 1].first >= fps[i].first))
        return {};
    return o;
  }
  // Version 1: fingerprints by path; one of a path the manifest has no file at
  // never matched, and is dropped.
  if (!reader.byIndex.empty()) return {};
  o.legacy = true;
  for (const auto& [path, f] : reader.byPath) {
    auto it =
        std::lower_bound(entries.begin(), entries.end(), path,
                         [](const bundle::Entry& e, const std::string& p) { return e.path < p; });
    if (it == entries.end() || it->path != path || it->type != bundle::Entry::Type::File) continue;
    fps.emplace_back(static_cast<uint32_t>(it - entries.begin()), f);
  }
  std::sort(fps.begin(), fps.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return o;
}

}  // namespace mesh::apply
