// The steps shared by kinds that manage one regular file with content and
// attributes: `file` and `credential`. They differ only in how content is named
// (plain sha256, or a keyed digest for secrets) and whether it may be shown.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "apply/context.hh"
#include "apply/kinds/attributes.hh"
#include "apply/outcome.hh"
#include "apply/step.hh"
#include "decl/model.hh"
#include "state/store.hh"

namespace mesh::apply {

struct WantedContent {
  std::string digest;  // what the wanted content hashes to, in the kind's scheme
  // The same scheme's digest of an open file on disk.
  std::function<std::string(int fd, const std::string& shown)> digestOfFile;
  // Calls `use` with the wanted bytes (read lazily: only when writing or diffing).
  std::function<void(const std::function<void(std::string_view)>& use)> withBytes;
  bool secret = false;  // never shown: diff is "(secret changed)"
};

// What was at the path before mesh-host first writes over it is kept for `r`
// (apply/originals.hh).
Decision reconcileContentFile(Step& step, const decl::Resource& r, const Attributes& attrs,
                              const Digest& want, const state::Record* rec,
                              const WantedContent& content);

// Whether the file `rec` describes still holds what was written.
bool contentFileAsWritten(Context& ctx, const state::Record& rec,
                          const std::function<std::string(int, const std::string&)>& digestOfFile);

// Removes the file `rec` describes when it still holds what was written.
Removal removeContentFile(Step& step, const state::Record& rec,
                          const std::function<std::string(int, const std::string&)>& digestOfFile);

}  // namespace mesh::apply
