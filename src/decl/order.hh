// Internal to the declaration parser: apply order. A resource comes after
// what it requires, what it restarts on, and any declared directory that
// contains its path; otherwise the declaration's own order is kept.
#pragma once

#include <vector>

#include "decl/draft.hh"

namespace mesh::decl {

// Sorts the drafts by their place in the text (stable), each moved once.
void inTextualOrder(Drafts& drafts);

// `resources` in textual order, with references already checked (checkAcross), put
// in apply order in place. Reports every dependency cycle (one message each, naming
// the whole cycle); the returned order is meaningful only when no cycle was reported.
std::vector<Resource> applyOrder(std::vector<Resource> resources, Diagnostics& diags);

}  // namespace mesh::decl
