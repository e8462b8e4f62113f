// What a declaration still needs from the state dir's blob and bundle stores:
// the digests its resources reference, by the kinds table (decl/kind_info.hh).
// `mesh-host gc` keeps these and removes the rest.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "decl/model.hh"

namespace mesh::decl {

// Every blob and bundle the declaration's resources reference, as hex digests.
void collectReferences(const Declaration& d, std::set<std::string>& hex);

// Every "sha256:<hex>" the text names, as hex digests: what to keep for a
// generation that no longer parses (a `from` file gone, a changed rule), so
// that gc errs on the side of keeping.
void collectReferencesFromText(std::string_view text, std::set<std::string>& hex);

}  // namespace mesh::decl
