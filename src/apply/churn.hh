// Churn: a resource created or updated again and again while the declaration did
// not ask for it (docs/operating.md, "Churn"). A pure computation over the
// history the state store keeps, so it tests on plain values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "state/store.hh"

namespace mesh::apply {

struct ChurnPolicy {
  int threshold = 2;    // churning at this many undeclared changes…
  int64_t window = 10;  // …within the node's last this-many cycles
};

struct Churn {
  int changes = 0;  // created/updated in the window while the want stayed the same
  // Each distinct reason with how often it occurred, most frequent first.
  std::vector<std::pair<std::string, int>> reasons;
  bool churning = false;
  // "drift: content changed ×3, restart-on m.x ×1"
  std::string reasonText() const;
};

// True when a history entry is a change the declaration did not ask for: a
// created/updated whose want equals the resource's previous want. `previousWant`
// is nullopt-like ("" with hasPrevious false) when nothing older is known; then
// the reason decides (`new` and `declared` are asked for).
bool isUndeclaredChange(const state::HistoryEntry& h, bool hasPrevious,
                        const std::string& previousWant);

// `newestFirst`: history entries of any resources, newest first (as
// Store::history returns them); `lastCycle`: the newest cycle of the node.
// Returns only resources with at least one undeclared change in the window.
//
// A restart owed to `restart-on` causes (reason "restart-on a, b") counts only
// when one of its causes changed undeclared in the same cycle: a process that
// restarts because its config was re-declared is doing its job.
std::map<std::string, Churn> computeChurn(const std::vector<state::HistoryEntry>& newestFirst,
                                          int64_t lastCycle, const ChurnPolicy& policy = {});

}  // namespace mesh::apply
