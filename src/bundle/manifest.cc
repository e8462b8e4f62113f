// Manifest: counting, and its stable JSON form for the state store.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "bundle/path.hh"
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

std::optional<Entry::Type> typeFromName(const std::string& s) {
  if (s == "file") return Entry::Type::File;
  if (s == "dir") return Entry::Type::Directory;
  if (s == "link") return Entry::Type::Symlink;
  return std::nullopt;
}

std::optional<Entry> entryFromJson(const json& j) {
  if (!j.is_object()) return std::nullopt;
  auto path = j.find("path");
  auto type = j.find("type");
  if (path == j.end() || !path->is_string() || type == j.end() || !type->is_string())
    return std::nullopt;
  Entry e;
  e.path = path->get<std::string>();
  // Only names in their normal form: anything else did not come from unpack().
  auto norm = normaliseEntryName(e.path);
  if (!std::holds_alternative<std::string>(norm) || std::get<std::string>(norm) != e.path ||
      e.path.empty())
    return std::nullopt;
  auto t = typeFromName(type->get<std::string>());
  if (!t) return std::nullopt;
  e.type = *t;
  if (e.type != Entry::Type::Symlink) {
    auto mode = j.find("mode");
    if (mode == j.end() || !mode->is_number_unsigned() || mode->get<uint64_t>() > 07777)
      return std::nullopt;
    e.mode = static_cast<mode_t>(mode->get<uint64_t>());
  }
  if (e.type == Entry::Type::File) {
    auto size = j.find("size");
    auto digest = j.find("digest");
    if (size == j.end() || !size->is_number_unsigned() || digest == j.end() || !digest->is_string())
      return std::nullopt;
    e.size = size->get<uint64_t>();
    auto d = Digest::parse(digest->get<std::string>());
    if (!d) return std::nullopt;
    e.content = *d;
  }
  if (e.type == Entry::Type::Symlink) {
    auto target = j.find("target");
    if (target == j.end() || !target->is_string() || target->get<std::string>().empty())
      return std::nullopt;
    e.target = target->get<std::string>();
  }
  return e;
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

std::string Manifest::str() const {
  json list = json::array();
  for (const auto& e : entries) {
    json j = {{"path", e.path}, {"type", typeName(e.type)}};
    if (e.type != Entry::Type::Symlink) j["mode"] = static_cast<uint64_t>(e.mode);
    if (e.type == Entry::Type::File) {
      j["size"] = e.size;
      j["digest"] = e.content.str();
    }
    if (e.type == Entry::Type::Symlink) j["target"] = e.target;
    list.push_back(std::move(j));
  }
  json doc = {{"version", kManifestVersion}, {"entries", std::move(list)}};
  // unpack() refuses names that are not UTF-8; `replace` only keeps str() from
  // throwing on a hand-built manifest that holds one.
  return jsonData(doc);
}

std::optional<Manifest> Manifest::parse(const std::string& text) {
  try {
    json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object()) return std::nullopt;
    auto version = doc.find("version");
    auto list = doc.find("entries");
    if (version == doc.end() || *version != kManifestVersion || list == doc.end() ||
        !list->is_array())
      return std::nullopt;
    Manifest m;
    m.entries.reserve(list->size());
    for (const auto& j : *list) {
      auto e = entryFromJson(j);
      if (!e) return std::nullopt;
      m.entries.push_back(std::move(*e));
    }
    std::sort(m.entries.begin(), m.entries.end(),
              [](const Entry& a, const Entry& b) { return a.path < b.path; });
    auto dup = std::adjacent_find(m.entries.begin(), m.entries.end(),
                                  [](const Entry& a, const Entry& b) { return a.path == b.path; });
    if (dup != m.entries.end()) return std::nullopt;
    return m;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

}  // namespace mesh::bundle
