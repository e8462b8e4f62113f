// Declaration generations as the CLI uses them (generations, rollback, gc):
// every distinct declaration applied, kept in the state store with where it came
// from, so it can be parsed — and applied — again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli/common.hh"
#include "decl/model.hh"
#include "state/store.hh"

namespace mesh::cli {

// The generation the last cycle applied; nullopt before any cycle.
std::optional<int64_t> currentGeneration(state::Store& store);

// The bounds generations are kept within, as words: those of the last trim that
// dropped one, else this command's (--keep-…, or the defaults).
std::string keptText(state::Store& store, const CommonOptions& o);

// Parses generation `n` as it was applied: its text, its source name, relative
// paths resolved in its base dir, `node` checked against --node. With
// `checkPrincipals`, owners and groups must exist on this node (as for apply).
// Throws InputError when it does not parse, Error when there is no such generation.
[[nodiscard]] decl::Declaration parseGeneration(state::Store& store, int64_t n,
                                                const CommonOptions& o, bool checkPrincipals);

}  // namespace mesh::cli
