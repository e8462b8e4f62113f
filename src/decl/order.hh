// Internal to the declaration parser: apply order. A resource comes after
// what it requires, what it restarts on, and any declared directory that
// contains its path; otherwise the declaration's own order is kept.
#pragma once

#include <vector>

#include "decl/draft.hh"

namespace mesh::decl {

// `drafts` in textual order, with references already checked (checkAcross).
// Reports every dependency cycle (one message each, naming the whole cycle);
// the returned order is meaningful only when no cycle was reported.
// Sorts the drafts by their place in the text (stable), each moved once.
void inTextualOrder(Drafts& drafts);

// The resources in apply order (requires, restart-on, reload-on and declared parent
// directories first; else the order given), reordered in place; a cycle is reported
// to `diags` and leaves them as given.
std::vector<Resource> applyOrder(std::vector<Resource> resources, Diagnostics& diags);

}  // namespace mesh::decl
