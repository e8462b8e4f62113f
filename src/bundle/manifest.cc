// Manifest: counting, and its stable JSON form for the state store.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "bundle/unpack.hh"
#include "util/text_safe.hh"

namespace mesh::bundle {

using nlohmann::json;

namespace {

constexpr int kManifestVersion = 1;

const char* typeName(Entry::Type t) {
  switch (t) {
    case Entry::Type::File:
      return "file";
    case Entry::Type::Directory:
      return "dir";
    case Entry::Type::Symlink:
      return "link";
  }
  return "?";
}

// One string as jsonData writes it, quotes included.
void appendString(std::string& out, const std::string& s) {
  out += jsonData(json(s));
}

}  // namespace

uint64_t Manifest::files() const {
  return static_cast<uint64_t>(std::count_if(
      entries.begin(), entries.end(), [](const Entry& e) { return e.type == Entry::Type::File; }));
}

uint64_t Manifest::bytes() const {
  uint64_t sum = 0;
  for (const auto& e : entries)
    if (e.type == Entry::Type::File) sum += e.size;
  return sum;
}

// Written as jsonData would write the document {"entries": [...], "version": 1}
// (keys sorted), without building it: a JSON value per entry costs several times
// the entry.
std::string Manifest::str() const {
  std::string out = "{\"entries\":[";
  out.reserve(entries.size() * 128 + 32);
  bool first = true;
  for (const auto& e : entries) {
    out += first ? "{" : ",{";
    first = false;
    if (e.type == Entry::Type::File) out += "\"digest\":\"" + e.content.str() + "\",";
    if (e.type != Entry::Type::Symlink) out += fmt::format("\"mode\":{},", e.mode);
    out += "\"path\":";
    appendString(out, e.path);
    if (e.type == Entry::Type::File) out += fmt::format(",\"size\":{}", e.size);
    if (e.type == Entry::Type::Symlink) {
      out += ",\"target\":";
      appendString(out, e.target);
    }
    out += ",\"type\":\"";
    out += typeName(e.type);
    out += "\"}";
  }
  out += fmt::format("],\"version\":{}}}", kManifestVersion);
  return out;
}

}  // namespace mesh::bundle
