// TreeObserved's text form in the state store: {"fingerprints": [[path,
// fingerprint], …], "manifest": "<Manifest::str()>"}, written and read without
// building a JSON document (for a tree of 100,000 files that document cost several
// times the record: the no-op of such an archive peaked at 231–259 MiB).
#include <algorithm>
#include <nlohmann/json.hpp>

#include "apply/kinds/tree.hh"
#include "util/text_safe.hh"

namespace mesh::apply {

using json = nlohmann::json;

namespace {

// One string as jsonData writes it, quotes included; plain ASCII without escapes
// (every path and fingerprint of a tree unpacked here, almost) as it is.
void appendString(std::string& out, const std::string& s) {
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f && c != '"' && c != '\\';
  });
  if (plain) {
    out += '"';
    out += s;
    out += '"';
  } else {
    out += jsonData(json(s));
  }
}

// TreeObserved's text read as a stream of events: {"fingerprints": [[path,
// fingerprint], …], "manifest": "<Manifest::str()>"}, the manifest parsed the moment
// its string ends. No document tree: for a tree of 100,000 files that tree cost
// several times the record.
class ObservedReader : public nlohmann::json_sax<json> {
 public:
  explicit ObservedReader(TreeObserved& out) : out_(out) {}
  bool complete() const { return !failed_ && sawManifest_ && sawFingerprints_ && depth_ == 0; }

  bool null() override {
    if (skip_ == 0 && depth_ == 1 && key_ == "fingerprints") {  // none, in the document form
      sawFingerprints_ = true;
      return true;
    }
    return other();
  }
  bool boolean(bool) override { return other(); }
  bool number_integer(number_integer_t) override { return other(); }
  bool number_unsigned(number_unsigned_t) override { return other(); }
  bool number_float(number_float_t, const string_t&) override { return other(); }
  bool binary(binary_t&) override { return other(); }
  bool string(string_t& s) override {
    if (skip_ > 0) return true;
    if (depth_ == 1 && key_ == "manifest") {
      sawManifest_ = true;
      out_.manifest = bundle::Manifest::parse(s);
      std::string().swap(s);
      return true;
    }
    if (depth_ == 3) {
      if (pair_ == 0) path_ = std::move(s);
      if (pair_ == 1) out_.cache.fingerprints.emplace_back(std::move(path_), std::move(s));
      ++pair_;
      return true;
    }
    return other();
  }
  bool start_object(std::size_t) override {
    if (skip_ > 0 || depth_ != 0) return nest();
    depth_ = 1;
    return true;
  }
  bool end_object() override {
    if (skip_ > 0) return unnest();
    depth_ = 0;
    return true;
  }
  bool start_array(std::size_t) override {
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
    if (skip_ > 0) return unnest();
    if (depth_ == 3 && pair_ < 2) return fail();  // [path] alone
    --depth_;
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
    return false;
  }
  // A value that is neither the manifest nor a fingerprint's string.
  bool other() {
    if (skip_ > 0) return true;
    if (depth_ == 0 || depth_ == 2) return fail();  // not an object; a pair not an array
    if (depth_ == 3) return pair_ < 2 ? fail() : (++pair_, true);  // extra elements count not
    if (key_ == "manifest" || key_ == "fingerprints") return fail();
    return true;
  }
  bool nest() {
    if (skip_ == 0) {
      if (depth_ == 2) return fail();
      if (depth_ == 3 && pair_ < 2) return fail();
      if (depth_ == 1 && (key_ == "manifest" || key_ == "fingerprints")) return fail();
    }
    ++skip_;
    return true;
  }
  bool unnest() {
    --skip_;
    if (skip_ == 0 && depth_ == 3) ++pair_;
    return true;
  }

  TreeObserved& out_;
  std::string key_, path_;
  int depth_ = 0;  // 0 outside, 1 in the object, 2 in "fingerprints", 3 in a pair
  int pair_ = 0;   // strings seen in the pair
  size_t skip_ = 0;
  bool sawManifest_ = false, sawFingerprints_ = false, failed_ = false;
};

}  // namespace

// Written as jsonData would write {"fingerprints": [...], "manifest": "..."}
// (keys sorted), without building that document.
std::string TreeObserved::str() const {
  if (!manifest) return {};
  std::string out = "{\"fingerprints\":[";
  bool first = true;
  for (const auto& [path, f] : cache.fingerprints) {
    out += first ? "[" : ",[";
    first = false;
    appendString(out, path);
    out += ',';
    appendString(out, f);
    out += ']';
  }
  out += "],\"manifest\":";
  out += jsonData(json(manifest->str()));
  out += '}';
  return out;
}

TreeObserved TreeObserved::parse(const std::string& text) {
  TreeObserved o;
  ObservedReader reader(o);
  if (!json::sax_parse(text, &reader) || !reader.complete()) return {};
  return o;
}

}  // namespace mesh::apply
