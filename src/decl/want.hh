// What a resource asks for, as its want digest, for the kinds whose want is a
// function of the declaration alone: file, directory, link, archive and absent. It is
// made once as the declaration is parsed and kept by the compiled form
// (Resource::want), so a cycle over a declaration read compiled builds and
// hashes none of them.
//
// A credential's want depends on its secret and the node's key, a process's on
// where bundles live and on --root: theirs are the appliers' (apply/kinds/) to
// make, on every cycle.
#pragma once

#include <sys/types.h>

#include <optional>

#include "decl/model.hh"
#include "util/digest.hh"

namespace mesh::decl {

// Whether kind's want is a function of its spec alone.
bool wantIsOfSpec(Kind kind);

// The want of `r`, when wantIsOfSpec(r.kind): computed, whatever r.want holds.
// None for the other kinds. A change here changes every recorded want, and so
// restarts what depends on it: a want's scheme ("file/1") is bumped only on purpose.
Digest specWant(const Resource& r);

// r.want when set (parsed or read compiled), else specWant(r).
inline Digest wantOf(const Resource& r) {
  return r.want.empty() ? specWant(r) : r.want;
}

// Mode and ownership as a want holds them (file, directory, credential):
// "mode" as four octal digits, "owner" and "group" by name ("" when not declared).
void addAttributeFields(WantBuilder& w, mode_t mode, const std::optional<Principal>& owner,
                        const std::optional<Principal>& group);

}  // namespace mesh::decl
