// AgentCore's log of a cycle: its outcomes (changes, or all with -v), at the level
// each verdict deserves, and its summary line.
#include "agent/core.hh"

#include <fmt/format.h>

namespace mesh::agent {

namespace {

Level levelOf(apply::Verdict v) {
  switch (v) {
    case apply::Verdict::Failed:
      return Level::Error;
    case apply::Verdict::Skipped:
      return Level::Warning;
    case apply::Verdict::Unchanged:
      return Level::Info;
    default:
      return Level::Notice;
  }
}

}  // namespace

// Logs the cycle's outcomes (changes, or all with -v) and its summary; returns
// the summary line.
std::string AgentCore::logReport(const apply::CycleReport& report, const std::string& planned) {
  const bool plan = !planned.empty();
  for (const auto& r : report.results)
    if (!r.outcome.warning.empty())
      log_.log(Level::Warning, fmt::format("warning: {}: {}", r.id, r.outcome.warning),
               {{"cycle", report.cycle}, {"id", r.id}});
  for (const auto& r : report.results) {
    const auto verdict = r.outcome.verdict();
    if (!o_.verbose && verdict == apply::Verdict::Unchanged) continue;
    log_.log(plan && verdict != apply::Verdict::Failed ? Level::Info : levelOf(verdict),
             (plan ? planned + ": " : "") + o_.outcomeLine(r, plan),
             {{"cycle", report.cycle},
              {"id", r.id},
              {"module", r.module},
              {"kind", r.kind},
              {"outcome", apply::verdictName(verdict)},
              {"reason", r.outcome.reason()},
              {"restarted", r.outcome.restarted},
              {"planned", plan}});
  }
  for (const auto& line : report.access)
    log_.log(Level::Info, "access: " + line, {{"cycle", report.cycle}});
  if (!report.accessError.empty())
    log_.log(Level::Error, report.accessError, {{"cycle", report.cycle}});
  std::string summary = o_.summaryLine(report, plan);
  // "paused: plan: 0 to create, 1 to update, …; nothing applied (paused by …)".
  if (plan)
    summary =
        planned == "paused" && pause_
            ? fmt::format("paused: {}; nothing applied ({})", summary, state::pauseText(*pause_))
            : fmt::format("{}: {}; nothing applied (run --noop)", planned, summary);
  if (report.interrupted) summary += " (interrupted: stopping)";
  log_.log(report.anyFailed() ? Level::Warning : Level::Info, summary,
           {{"cycle", report.cycle},
            {"trigger", runningTrigger_},
            {"created", report.tally.created},
            {"updated", report.tally.updated},
            {"unchanged", report.tally.unchanged},
            {"removed", report.tally.removed},
            {"released", report.tally.released},
            {"skipped", report.tally.skipped},
            {"failed", report.tally.failed},
            {"ms", report.ms},
            {"interrupted", report.interrupted},
            {"planned", plan}});
  return summary;
}

}  // namespace mesh::agent
