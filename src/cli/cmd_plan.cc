// `mesh-host plan DECL`: what apply would do, with diffs. The same cycle as
// apply with the context's gate closed; the state store is only read.
#include <cstdio>
#include <optional>

#include <filesystem>

#include "apply/cycle.hh"
#include "apply/plan_file.hh"
#include "cli/commands.hh"
#include "cli/output.hh"
#include "cli/progress.hh"
#include "state/compiled_cache.hh"
#include "state/lock.hh"
#include "state/store.hh"
#include "util/clock.hh"
#include "util/digest.hh"
#include "util/fs.hh"
#include "util/text_safe.hh"

namespace mesh::cli {

void PlanOptions::addTo(CLI::App& cmd) {
  cmd.add_option("--out", out,
                 "also write the plan to FILE (mode 0600), for mesh-host apply --plan FILE to "
                 "apply exactly, or refuse")
      ->option_text("FILE");
  cmd.add_flag("--detailed-exitcode", detailed,
               "as terraform plan: exit 0 no changes, 2 changes pending, 1 a resource would fail "
               "or bad input");
}

int runPlan(const std::string& declPath, CommonOptions& o, const PlanOptions& p) {
  o.resolve();
  // A plan writes nothing: what it parsed is not kept (no keepIn).
  state::StoredCompiledCache compiled(o.stateDir);
  const auto declaration = loadDeclarationFor(declPath, o, &compiled);
  std::optional<state::StateLock> lock;
  std::optional<state::Store> store;
  if (state::StateDir{o.stateDir}.hasStore()) {
    lock = state::StateLock::acquire(o.stateDir, state::StateLock::Kind::Shared);
    store = state::Store::open(o.stateDir, state::Store::Access::ReadOnly);
  }
  apply::Context ctx(o.settings(/*plan=*/true));
  // On a terminal, long work shows how far it is (stderr; stdout stays the answer).
  Progress progress(Progress::stderrIsTerminal());
  ctx.progress = [&progress](size_t done, size_t total) { progress.update(done, total); };
  ctx.byteProgress = [&progress](std::string_view what, uint64_t done, uint64_t total) {
    progress.updateBytes(what, done, total);
  };
  const auto report =
      apply::runCycle(ctx, declaration, declaration.text, store ? &*store : nullptr);
  progress.finish();  // before the report is printed
  if (!p.out.empty()) {
    apply::PlanFile file;
    file.node = o.node;
    file.root = o.root;
    file.declarationPath = std::filesystem::absolute(declPath).lexically_normal().string();
    file.declaration = declaration.text;
    file.declarationDigest = Digest::ofBytes(declaration.text).str();
    file.version = kVersion;
    file.plannedAtMs = unixNowMs();
    file.resources = apply::plannedResources(report);
    atomicWrite(std::filesystem::absolute(p.out).string(), apply::encodePlanFile(file), 0600);
  }

  for (const auto& r : report.results)
    if (!r.outcome.warning.empty())
      printLine("mesh-host: warning: " + r.id + ": " + r.outcome.warning, stderr);
  if (o.json) {
    std::puts(jsonOut(reportJson(report, o.node, true)).c_str());
  } else {
    for (const auto& r : report.results) {
      if (!o.verbose && r.outcome.verdict() == apply::Verdict::Unchanged) continue;
      printLine(outcomeLine(r, true));
      if (!r.outcome.diff.empty()) printLines(r.outcome.diff);  // its lines, escaped
    }
    printAccess(report);
    printLine(summaryLine(report, true));
  }
  if (report.anyFailed()) return kExitFailed;
  if (!report.anyChange()) return kExitOk;
  return p.detailed ? kExitDetailedChanges : kExitPending;
}

}  // namespace mesh::cli
