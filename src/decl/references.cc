#include "decl/references.hh"

#include <regex>

#include "decl/kind_info.hh"

namespace mesh::decl {

void collectReferences(const Declaration& d, std::set<std::string>& hex) {
  for (const auto& r : d.resources)
    for (const Digest& digest : kindInfo(r.kind).blobs(r.spec)) hex.insert(digest.hex());
}

void collectReferencesFromText(std::string_view text, std::set<std::string>& hex) {
  static const std::regex digest("sha256:([0-9a-f]{64})");
  for (std::cregex_iterator it(text.data(), text.data() + text.size(), digest), end; it != end;
       ++it)
    hex.insert((*it)[1].str());
}

}  // namespace mesh::decl
