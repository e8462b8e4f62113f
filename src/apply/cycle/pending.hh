// What the cycle's parts (apply/cycle/) pass one another about a resource on its
// way through a cycle: the resource in hand (Pending), which processes a change
// owes (Dependent), and which resources failed or were skipped (Failures).
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>

#include "apply/outcome.hh"
#include "decl/model.hh"
#include "state/store.hh"
#include "util/digest.hh"

namespace mesh::apply::cycle {

// One resource on its way through the cycle. Its names are views: of the
// declaration's resource, of a kept record (pruning) or of a kind's static name,
// all of which outlive the cycle's use of it (no copies per resource).
struct Pending {
  std::string_view id, module, kind, path;
  Digest want;
  const state::Record* rec;
  size_t resultIndex;  // Settlement::result
};

// A process that restarts (or reloads) when a cause of it changes.
struct Dependent {
  std::string process;
  bool reload = false;
};

// The resources that did not converge this cycle: failed (or skipped), and skipped.
struct Failures {
  std::unordered_set<std::string> failed;  // failed or skipped
  std::unordered_set<std::string> skipped;

  // The first of `r`'s requirements (or causes) that did not converge; "" when none.
  std::string failedDependency(const decl::Resource& r) const {
    for (const auto* deps : {&r.requires_, &r.restartOn, &r.reloadOn})
      for (const auto& dep : *deps)
        if (failed.count(dep)) return dep;
    return {};
  }
};

// A removal that deleted what mesh-host wrote (a plan: would delete it), or
// put back what was there before it, not one that found it gone (or put back)
// already.
inline bool deletedNow(const Outcome& o) {
  const bool restored =
      (o.reason() == reasons::kRestored || o.reason() == reasons::kWouldRestore) &&
      !o.detail().starts_with(Removal::kAlreadyRestored);
  return o.verdict() == Verdict::Removed &&
         (o.detail() == "deleted" || o.detail() == "would delete" || restored);
}

}  // namespace mesh::apply::cycle
