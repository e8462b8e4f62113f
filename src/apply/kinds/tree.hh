// An unpacked bundle tree, shared by `archive` (a bundle at a declared path) and
// `process` (a bundle under <state-dir>/bundles/<hex>): what the record
// remembers of it, how it is checked, and how a new one is switched in.
#pragma once

#include <optional>
#include <string>

#include "apply/context.hh"
#include "bundle/unpack.hh"

namespace mesh::apply {

// What a record remembers of a tree: the manifest of what was unpacked and the
// stat fingerprints of its files when last verified.
struct TreeObserved {
  std::optional<bundle::Manifest> manifest;
  bundle::VerifyCache cache;

  std::string str() const;
  static TreeObserved parse(const std::string& text);  // empty when malformed
};

// Checks the tree at `hostDir` against the bundle. `prev` (from the record) gives
// the manifest and fingerprints when trusted; otherwise the manifest is read from
// the bundle itself. Returns nullopt when intact (then `now` holds fresh data),
// else the first difference ("missing: bin/x", "changed: etc/y", …).
std::optional<std::string> checkTree(Context& ctx, const std::string& hostDir, const Digest& bundle,
                                     const bundle::Limits& limits, const TreeObserved& prev,
                                     TreeObserved& now);

// Unpacks the bundle beside `hostDir` and switches it in with one atomic rename
// (an exchange when a tree is there already); returns its manifest.
bundle::Manifest unpackAndSwitch(const std::string& blob, const std::string& hostDir,
                                 const bundle::Limits& limits, bool replacing);

}  // namespace mesh::apply
