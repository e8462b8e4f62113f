// `mesh-host apply DECL`: one cycle now.
#include <cstdio>

#include "apply/reconcile.hh"
#include "cli/commands.hh"
#include "cli/metrics.hh"
#include "cli/output.hh"
#include "cli/progress.hh"
#include "state/store.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::cli {

void ExitCodes::addTo(CLI::App& cmd) {
  cmd.add_flag("--detailed-exitcode", detailed,
               "exit 0 nothing changed, 2 changes, 4 a resource failed, 6 both; 1 the cycle could "
               "not run or bad input (nothing applied)");
}

void ApplyOptions::addTo(CLI::App& cmd) {
  cmd.add_option("--metrics", metrics,
                 "write node_exporter textfile metrics to FILE after the cycle (atomically)")
      ->option_text("FILE");
  exitCodes.addTo(cmd);
}

int applyAndReport(const decl::Declaration& declaration, const CommonOptions& o,
                   state::Store& store, const std::string& metricsPath,
                   const ExitCodes& exitCodes) {
  apply::Context ctx(o.settings(/*plan=*/false));
  // On a terminal, long work shows how far it is (stderr; stdout stays the answer).
  Progress progress(Progress::stderrIsTerminal());
  ctx.progress = [&progress](size_t done, size_t total) { progress.update(done, total); };
  ctx.byteProgress = [&progress](std::string_view what, uint64_t done, uint64_t total) {
    progress.updateBytes(what, done, total);
  };
  const auto report = apply::runCycle(ctx, declaration, declaration.text, &store);
  progress.finish();  // before the report is printed

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
  if (!metricsPath.empty()) {
    // The cycle is done and recorded; metrics that cannot be written fail the
    // command but change nothing on the node.
    try {
      writeMetrics(metricsPath, report, store, o.node);
    } catch (const Error& e) {
      std::fprintf(stderr, "mesh-host: cannot write metrics to %s: %s\n", metricsPath.c_str(),
                   e.what());
      return kExitFailed;
    }
  }
  if (exitCodes.detailed) {
    return (report.anyChange() ? kExitDetailedChanges : 0) +
           (report.anyFailed() ? kExitDetailedFailures : 0);
  }
  return report.anyFailed() ? kExitFailed : kExitOk;
}

int runApply(const std::string& declPath, CommonOptions& o, const ApplyOptions& a) {
  o.resolve();
  CompiledToKeep compiled;
  // Bad input: nothing touched yet.
  const auto declaration = loadDeclarationFor(declPath, o, &compiled);
  makeDirs(o.stateDir, 0750);
  auto lock = state::StateLock::acquire(o.stateDir, state::StateLock::Kind::Exclusive);
  auto store = state::Store::open(o.stateDir);
  // Parsed this time: the next apply of the same text reads it compiled. Before
  // the cycle, so that a cycle cut short still leaves it.
  if (!compiled.key.empty()) store.putCompiledDeclaration(compiled.key, compiled.form);
  return applyAndReport(declaration, o, store, a.metrics, a.exitCodes);
}

}  // namespace mesh::cli
