// An unpacked bundle tree, shared by `archive` (a bundle at a declared path) and
// `process` (a bundle under <state-dir>/bundles/<hex>): what the record
// remembers of it, how it is checked, and how a new one is switched in. All of it
// through the descriptor of the directory holding the tree (a Context::Place):
// no path string is handed to the kernel.
#pragma once

#include <optional>
#include <string>

#include "apply/context.hh"
#include "bundle/unpack.hh"
#include "util/fd.hh"

namespace mesh::apply {

// What a record remembers of a tree: the manifest of what was unpacked and the
// stat fingerprints of its files when last verified.
struct TreeObserved {
  std::optional<bundle::Manifest> manifest;
  bundle::VerifyCache cache;
  bool legacy = false;  // read from the form of an earlier version: to be written again

  std::string str() const;
  [[nodiscard]] static TreeObserved parse(std::string_view text);  // empty when malformed
};

// The tree at `at`, opened O_DIRECTORY|O_NOFOLLOW: nullopt when nothing is there
// or what is there is not a directory (a link to one included).
std::optional<Fd> openTree(const Context::Place& at);

// Checks the tree at `at` against the bundle. `prev` (from the record) gives
// the manifest and fingerprints when trusted; otherwise the manifest is read from
// the bundle itself. `difference` is nullopt when intact (then `now` holds fresh
// data), else the first difference ("missing", "not a directory", "missing: bin/x",
// "changed: etc/y", …); `now.manifest` is set whenever the tree could be read.
// `sameAsPrev`: intact, and `now` is `prev` exactly (the same manifest, the same
// fingerprints, in the current form): the record need not be written again.
struct TreeCheck {
  std::optional<std::string> difference;
  TreeObserved now;
  bool sameAsPrev = false;
};
[[nodiscard]] TreeCheck checkTree(Context& ctx, const Context::Place& at, const Digest& bundle,
                                  const bundle::Limits& limits, TreeObserved prev);

// Unpacks the bundle at tempNameFor(at.name, "new") in the same directory and
// switches it in with one atomic rename — an exchange when something is there
// already, whose old content is then removed; then the context's open
// directories are forgotten, so `at.dir` is not to be used after an exchange.
// Returns its manifest. `at.dir` must be open: the caller makes missing parents
// (and removes them when this throws).
bundle::Manifest unpackAndSwitch(Context& ctx, const std::string& blob, const Context::Place& at,
                                 const bundle::Limits& limits);

}  // namespace mesh::apply
