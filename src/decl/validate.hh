// Internal to the declaration parser: checks that span resources — ids are
// unique, references resolve, no two resources manage the same path or
// service, no path lies inside an archive or beneath a link (or in the state
// directory). Ordering and cycles are in order.hh.
#pragma once

#include <string_view>
#include <vector>

#include "decl/draft.hh"

namespace mesh::decl {

// `drafts` in textual order, so the later of two duplicates is the one
// reported. Fills each Resource's requires_/restartOn/reloadOn with the refs that resolve.
// `stateDir`: ParseOptions::stateDir.
void checkAcross(Drafts& drafts, Diagnostics& diags, std::string_view stateDir = {});

}  // namespace mesh::decl
