// One row per resource kind: its name in a declaration, the reader of its
// table, and the blobs a resource of that kind references. Adding a kind is a
// Kind value, a Spec alternative, a reader in kinds.cc and one row in this table
// (plus one applier in apply/); the sizes are checked at compile time.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "decl/model.hh"

namespace mesh::decl {

class Fields;
struct Draft;
struct ParseOptions;

// One kind per Spec alternative.
inline constexpr size_t kKindCount = std::variant_size_v<Spec>;

struct KindInfo {
  Kind kind;
  std::string_view name;  // as written in [module.<module>.<kind>.<name>]
  // Reads the kind's keys from a resource table (decl/kinds.cc).
  Spec (*read)(Fields& f, Draft& d, const ParseOptions& options);
  // The blobs (and bundles) a resource of this kind references, by digest.
  std::vector<Digest> (*blobs)(const Spec& spec);
};

// Whether row k of a per-kind table is Kind k's (with the array's size of
// kKindCount, every kind then has its row): for static_assert.
template <typename Row>
constexpr bool rowsFollowKind(const std::array<Row, kKindCount>& table) {
  for (size_t i = 0; i < table.size(); ++i)
    if (static_cast<size_t>(table[i].kind) != i) return false;
  return true;
}

// Indexed by Kind.
extern const std::array<KindInfo, kKindCount> kKindTable;

const KindInfo& kindInfo(Kind k);
// "file, directory, link, archive, credential, process": for messages.
std::string kindList();

}  // namespace mesh::decl
