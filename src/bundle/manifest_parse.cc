// Manifest::parse and ManifestReader (bundle/manifest_reader.hh): the manifest's
// JSON read as a stream of events (nlohmann's SAX), each entry checked and kept as
// it ends. No document tree is built: a record of
// 100,000 entries costs the entries, not a JSON value of each (several times more).
// Accepts exactly what the document form accepted: an object with "version": 1 and
// "entries", an array of objects each valid as entryFromJson checked (unknown keys
// ignored, the last of a repeated key counts).
#include <algorithm>
#include <nlohmann/json.hpp>

#include "bundle/manifest_reader.hh"
#include "bundle/path.hh"

namespace mesh::bundle {

using nlohmann::json;

namespace detail {

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

}  // namespace detail

std::optional<Manifest> ManifestReader::result() {
  if (failed_ || !version_ || !sawEntries_) return std::nullopt;
  Manifest m = std::move(m_);
  std::sort(m.entries.begin(), m.entries.end(),
            [](const Entry& a, const Entry& b) { return a.path < b.path; });
  auto dup = std::adjacent_find(m.entries.begin(), m.entries.end(),
                                [](const Entry& a, const Entry& b) { return a.path == b.path; });
  if (dup != m.entries.end()) return std::nullopt;
  return m;
}

std::optional<Manifest> Manifest::parse(const std::string& text) {
  ManifestReader reader;
  if (!json::sax_parse(text, &reader)) return std::nullopt;
  return reader.result();
}

}  // namespace mesh::bundle
