// Declaration loading. Parsing is pure (text in, model out) so it tests on plain
// strings; loadDeclaration adds the file read. Every error is an InputError whose
// message names file:line:column, what is wrong and what to do; when there are
// several, all are reported, one per line.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "decl/model.hh"
#include "util/compiled_cache.hh"

namespace mesh::decl {

// A compiled form (compiled.hh) where it is kept, read a piece at a time, and
// where compiled forms are kept (util/compiled_cache.hh).
using FormSource = mesh::FormSource;
using CompiledCache = mesh::CompiledCache;

struct ParseOptions {
  // --node: a declared `node` must equal it; what {node} stands for.
  std::string node;
  // The fleet's cluster (the agent's --cluster, fleet push's): a declared `cluster`
  // must equal it; what {cluster} stands for. Unset outside fleet mode: the declared
  // `cluster`, if any, is (decl/placeholders.hh).
  std::optional<std::string> cluster;
  // Directory that a relative credential `from` is resolved against (the
  // declaration file's directory).
  std::string baseDir = ".";
  // mesh-host's state directory as a declared path (relative to --root, e.g.
  // "/var/lib/mesh-host"), when it lies under the root: a declared path at or
  // under it, or an archive above it, is refused — it holds the state store,
  // the node key and the process bundles. Empty: not checked.
  std::string stateDir;
  // Do these users/groups exist on this node? Names that do not are errors.
  // Unset: every name is accepted (pure unit tests).
  std::function<bool(const std::string&)> userExists;
  std::function<bool(const std::string&)> groupExists;
  // loadDeclaration calls it with the exact bytes it read, before parsing them,
  // so that a signature is checked over the very bytes that are applied. It
  // throws (InputError) to refuse them. Unset: no check.
  std::function<void(const std::string& path, std::string_view text)> checkText;
  // Where loadDeclaration keeps compiled declarations (compiled.hh): it looks
  // there first, by compiledKey, and offers it what it had to parse. Null: parse.
  CompiledCache* compiled = nullptr;
  // A text of the plain shape is parsed a resource at a time (decl/pieces.hh);
  // false: always whole. What comes of it is the same either way — the tests and
  // the fuzz target compare the two.
  bool inPieces = true;
};

[[nodiscard]] Declaration parseDeclaration(std::string_view text, const std::string& source,
                                           const ParseOptions& options);

// Parses text that did not come from a file (fleet mode: a pushed declaration);
// users and groups are checked against this node.
[[nodiscard]] Declaration parseOnThisNode(std::string_view text, const std::string& source,
                                          ParseOptions options);

// Reads `path` and parses it; users and groups are checked against this node.
Declaration loadDeclaration(const std::string& path, ParseOptions options);

}  // namespace mesh::decl
