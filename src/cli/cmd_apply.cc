// `mesh-host apply DECL`: one cycle now.
#include <fcntl.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "apply/cycle.hh"
#include "apply/plan_file.hh"
#include "cli/commands.hh"
#include "cli/metrics.hh"
#include "cli/output.hh"
#include "cli/progress.hh"
#include "decl/compiled.hh"
#include "state/compiled_cache.hh"
#include "state/lock.hh"
#include "state/store.hh"
#include "util/digest.hh"
#include "util/error.hh"
#include "util/fd.hh"
#include "util/fs.hh"
#include "util/leak_at_exit.hh"
#include "util/text_safe.hh"

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
  cmd.add_flag("--force", force,
               "apply even while mesh-host pause is in force (refused otherwise: exit 5, nothing "
               "applied); the pause stays");
  cmd.add_option("--plan", plan,
                 "apply the plan FILE (mesh-host plan DECL --out FILE) exactly, instead of DECL; "
                 "exit 4 and nothing applied when the declaration, the node or any resource's "
                 "state on the machine moved since the plan")
      ->option_text("FILE");
}

int applyAndReport(const decl::Declaration& declaration, const CommonOptions& o,
                   state::Store& store, const std::string& metricsPath, const ExitCodes& exitCodes,
                   bool force) {
  if (auto refused = refuseWhilePaused(o, "apply", force)) return *refused;
  apply::Context ctx(o.settings(/*plan=*/false));
  // On a terminal, long work shows how far it is (stderr; stdout stays the answer).
  Progress progress(Progress::stderrIsTerminal());
  ctx.progress = [&progress](size_t done, size_t total) { progress.update(done, total); };
  ctx.byteProgress = [&progress](std::string_view what, uint64_t done, uint64_t total) {
    progress.updateBytes(what, done, total);
  };
  // Each outcome becomes what is printed of it as the cycle settles it, and the
  // report keeps no outcome: held to be printed at the end, a first apply of
  // 100,000 files kept ~450 bytes each (88 MB with the array's growth), where its
  // line is ~30. The text output prints only what is not `unchanged` (and
  // warnings), unless --verbose; the JSON lists every outcome. Both are printed
  // with the summary once the cycle is done (a cycle that fails prints the error
  // alone).
  std::string outcomesJson;
  std::string outcomeLines;  // the text output's, each shown and ended by '\n'
  std::vector<std::string> warnings;
  std::exception_ptr unprintable;  // thrown once the cycle is done, as before
  const bool verbose = o.verbose;
  apply::OutcomeSink sink;
  if (o.json)
    sink = [&outcomesJson, &warnings, &unprintable](apply::ResourceResult&& r) {
      if (!r.outcome.warning.empty())
        warnings.push_back(fmt::format("{}: {}", r.id, r.outcome.warning));
      if (unprintable) return;
      try {
        std::string j = jsonOut(outcomeJson(r, false));
        if (!outcomesJson.empty()) outcomesJson += ',';
        outcomesJson += j;
      } catch (...) {  // never cuts the cycle short: it fails the output, after it
        unprintable = std::current_exception();
      }
    };
  else
    sink = [&outcomeLines, &warnings, verbose](apply::ResourceResult&& r) {
      if (!r.outcome.warning.empty())
        warnings.push_back(fmt::format("{}: {}", r.id, r.outcome.warning));
      if (verbose || r.outcome.verdict() != apply::Verdict::Unchanged)
        outcomeLines += shownLine(outcomeLine(r, false));
    };
  // JSON lists every outcome; the text output, without --verbose, those it prints
  // or warns of.
  const auto keep = o.json || o.verbose ? apply::KeepOutcomes::All : apply::KeepOutcomes::Changes;
  const auto report =
      apply::runCycle(ctx, declaration, declaration.text, &store, keep, std::move(sink));
  progress.finish();  // before the report is printed

  for (const auto& w : warnings) printLine("mesh-host: warning: " + w, stderr);
  if (o.json) {
    if (!report.accessError.empty()) printLine("mesh-host: " + report.accessError, stderr);
    if (unprintable) std::rethrow_exception(unprintable);
    std::puts(reportJsonText(report, o.node, outcomesJson).c_str());
  } else {
    std::fwrite(outcomeLines.data(), 1, outcomeLines.size(), stdout);
    printAccess(report);
    printLine(summaryLine(report, false));
  }
  if (!metricsPath.empty()) {
    // The cycle is done and recorded; metrics that cannot be written fail the
    // command but change nothing on the node.
    try {
      writeMetrics(metricsPath, report, store, o.node);
    } catch (const Error& e) {
      printLine(fmt::format("mesh-host: cannot write metrics to {}: {}", metricsPath, e.what()),
                stderr);
      return kExitFailed;
    }
  }
  if (exitCodes.detailed) {
    return (report.anyChange() ? kExitDetailedChanges : 0) +
           (report.anyFailed() ? kExitDetailedFailures : 0);
  }
  return report.anyFailed() ? kExitFailed : kExitOk;
}

namespace {

// `apply --plan FILE`: the plan made again under the state lock must say what the file
// says, resource by resource, or nothing is applied (exit 4).
int applyPlan(CommonOptions& o, const ApplyOptions& a) {
  if (a.exitCodes.detailed)
    throw InputError("--plan and --detailed-exitcode do not go together: both answer with exit 4");
  const std::string planPath = std::filesystem::absolute(a.plan).string();
  Fd fd(::open(planPath.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw InputError("--plan {}: cannot read it: {}", planPath, std::strerror(errno));
  const auto plan = apply::decodePlanFile(readAll(fd.get(), planPath), planPath);
  const auto refuse = [&](const std::vector<std::string>& moved) {
    printLine(fmt::format("mesh-host: the plan {} no longer holds; nothing was applied:", planPath),
              stderr);
    for (const auto& m : moved) printLine("  " + m, stderr);
    printLine(fmt::format("mesh-host: review it again: mesh-host plan {} --out {}",
                          plan.declarationPath, planPath),
              stderr);
    if (o.json)
      std::puts(jsonOut(nlohmann::json{{"schema", kJsonSchema},
                                       {"node", o.node},
                                       {"plan", planPath},
                                       {"applied", false},
                                       {"moved", moved}})
                    .c_str());
    return kExitPlanMoved;
  };
  if (plan.node != o.node)
    return refuse(
        {fmt::format("the plan was made for node {}; this is node {}", plan.node, o.node)});
  if (plan.root != o.root)
    return refuse(
        {fmt::format("the plan was made for --root {}; this is --root {}", plan.root, o.root)});
  const auto declaration = loadDeclarationFor(plan.declarationPath, o);
  if (Digest::ofBytes(declaration.text).str() != plan.declarationDigest)
    return refuse({fmt::format("the declaration {} changed since the plan", plan.declarationPath)});
  makeDirs(o.stateDir, 0750);
  auto lock = state::StateLock::acquire(o.stateDir, state::StateLock::Kind::Exclusive);
  auto store = state::Store::open(o.stateDir);
  {
    apply::Context planning(o.settings(/*plan=*/true));
    const auto again = apply::runCycle(planning, declaration, declaration.text, &store);
    const auto moved = apply::planDifferences(plan.resources, apply::plannedResources(again));
    if (!moved.empty()) return refuse(moved);
  }
  return applyAndReport(declaration, o, store, a.metrics, a.exitCodes, a.force);
}

}  // namespace

int runApply(const std::string& declPath, CommonOptions& o, const ApplyOptions& a) {
  o.resolve();
  if (!a.plan.empty() && !declPath.empty())
    throw InputError("apply takes DECL or --plan FILE, not both: the plan names its declaration");
  if (!a.plan.empty()) return applyPlan(o, a);
  if (declPath.empty()) throw InputError("apply: name the declaration (DECL) or a --plan FILE");
  state::StoredCompiledCache compiled(o.stateDir);
  // Bad input: nothing touched yet. The process exits once this command returns:
  // the model is left to the exit, not freed a resource at a time (~0.5 ms of a
  // no-op apply of 5,000 files).
  auto& declaration = leakAtExit<decl::Declaration>(loadDeclarationFor(declPath, o, &compiled));
  makeDirs(o.stateDir, 0750);
  auto lock = state::StateLock::acquire(o.stateDir, state::StateLock::Kind::Exclusive);
  auto store = state::Store::open(o.stateDir);
  // Parsed this time: the next apply of the same text reads it compiled. Before
  // the cycle, so that a cycle cut short still leaves it.
  compiled.keepIn(store, [&](const std::function<void(std::string_view)>& sink) {
    return decl::compileDeclaration(declaration, sink);
  });
  // A text recorded as a generation already (every no-op apply) is not needed
  // again: the cycle only updates its row. Freed, its memory serves the cycle's.
  // The state lock is held, so the row stays until the cycle has used it.
  if (store.knowsGeneration(declaration.digest.str())) std::string().swap(declaration.text);
  return applyAndReport(declaration, o, store, a.metrics, a.exitCodes, a.force);
}

}  // namespace mesh::cli
