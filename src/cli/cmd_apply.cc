// `mesh-host apply DECL`: one cycle now.
#include <cstdio>

#include "apply/reconcile.hh"
#include "cli/commands.hh"
#include "cli/output.hh"
#include "state/store.hh"
#include "util/fs.hh"

namespace mesh::cli {

int runApply(const std::string& declPath, CommonOptions& o) {
  o.resolve();
  const auto declaration = loadDeclarationFor(declPath, o);  // bad input: nothing touched yet
  makeDirs(o.stateDir, 0750);
  auto lock = state::StateLock::acquire(o.stateDir, state::StateLock::Kind::Exclusive);
  auto store = state::Store::open(o.stateDir);
  apply::Context ctx(o.settings(/*plan=*/false));
  const auto report = apply::runCycle(ctx, declaration, declaration.text, &store);

  for (const auto& r : report.results)
    if (!r.outcome.warning.empty())
      std::fprintf(stderr, "mesh-host: warning: %s: %s\n", r.id.c_str(), r.outcome.warning.c_str());
  if (o.json) {
    std::puts(reportJson(report, o.node, false).dump().c_str());
  } else {
    for (const auto& r : report.results)
      if (o.verbose || r.outcome.verdict() != apply::Verdict::Unchanged)
        std::puts(outcomeLine(r, false).c_str());
    std::puts(summaryLine(report, false).c_str());
  }
  return report.anyFailed() ? kExitFailed : kExitOk;
}

}  // namespace mesh::cli
