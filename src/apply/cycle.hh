// One cycle over a whole declaration: every declared resource in apply order,
// then the pruning of what is no longer declared. Plan and apply run this same
// code; the context's gate decides whether anything is written.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "apply/context.hh"
#include "apply/outcome.hh"
#include "decl/model.hh"
#include "state/store.hh"

namespace mesh::apply {

struct ResourceResult {
  std::string id;
  std::string module;
  std::string kind;
  Outcome outcome;
  std::string path;  // the managed path on the node, "" for a process
};

struct CycleReport {
  int64_t cycle = 0;                    // 0 for a plan
  std::vector<ResourceResult> results;  // in apply order; which ones: KeepOutcomes
  Tally tally;
  int64_t ms = 0;
  bool interrupted = false;  // stopped early on request (SIGTERM): not every resource was seen
  supervise::CallCounts supervisorCalls;
  std::string supervisor;  // backend name, "" when no process was involved
  // What the cycle changed of service users' access to their bundles
  // (apply/bundle_access.hh), one line each; and why it could not, when it could not.
  std::vector<std::string> access;
  std::string accessError;
  bool anyFailed() const { return tally.anyFailed() || !accessError.empty(); }
  bool anyChange() const { return tally.anyChange(); }
};

// Which outcomes the report keeps (every one is counted in its tally either way).
enum class KeepOutcomes {
  All,      // every outcome, in apply order (plan, JSON, --verbose)
  Changes,  // all but `unchanged` ones without a warning: what the text output prints
};

// Given to runCycle, it is handed each outcome the report would keep (KeepOutcomes)
// once final (recorded), in apply order, and the report keeps none: `apply`
// turns each into its output at once (a `--json` apply serializes each, the text
// output keeps its line) instead of holding 100,000 outcomes to print at the end.
// Outcomes recorded later than they are decided (a staged write, a start) hold
// back the ones after them until they are.
using OutcomeSink = std::function<void(ResourceResult&&)>;

// `store` may be null only when planning on a node with no state store yet.
// `text` is the declaration's exact text, kept as a generation.
CycleReport runCycle(Context& ctx, const decl::Declaration& d, const std::string& text,
                     state::Store* store, KeepOutcomes keep = KeepOutcomes::All,
                     OutcomeSink sink = {});

}  // namespace mesh::apply
