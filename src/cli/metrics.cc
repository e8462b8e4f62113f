#include "cli/metrics.hh"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "apply/churn.hh"
#include "apply/process_info.hh"
#include "state/drift_note.hh"
#include "state/pause.hh"
#include "state/pending_note.hh"
#include "util/clock.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/text_safe.hh"

namespace mesh::cli {

namespace {

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

std::string escapeLabelValue(std::string_view raw) {
  // The exposition format is UTF-8 with only \\, \" and \n escaped: a byte a terminal
  // would obey or one that is not UTF-8 (it makes a scraper reject the whole file) is
  // shown escaped as everywhere else (util/text_safe.hh), its backslash escaped here.
  const std::string value = shownLines(raw);
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string renderMetrics(const MetricsSnapshot& s) {
  std::string out;
  const std::string node = escapeLabelValue(s.node);
  header(out, "mesh_host_cycle_duration_seconds", "gauge", "How long the last cycle took.");
  out += fmt::format("mesh_host_cycle_duration_seconds {:.3f}\n", s.durationSeconds);
  header(out, "mesh_host_last_cycle_timestamp_seconds", "gauge",
         "When the last cycle finished, in unix seconds.");
  out +=
      fmt::format("mesh_host_last_cycle_timestamp_seconds {:.3f}\n", s.lastCycleTimestampSeconds);
  header(out, "mesh_host_cycle", "gauge",
         "The number of the last cycle, with the node and declaration generation it applied.");
  out += fmt::format("mesh_host_cycle{{node=\"{}\",generation=\"{}\",interrupted=\"{}\"}} {}\n",
                     node, s.generation, s.interrupted ? "true" : "false", s.cycle);
  header(out, "mesh_host_resources", "gauge", "Resources by their outcome in the last cycle.");
  for (const auto& [outcome, n] : s.tally.named())
    out += fmt::format("mesh_host_resources{{outcome=\"{}\"}} {}\n", outcome, n);
  header(out, "mesh_host_churning_resources", "gauge",
         "Resources created or updated again and again while their declaration did not change.");
  out += fmt::format("mesh_host_churning_resources {}\n", s.churning);
  header(out, "mesh_host_restarts_total", "counter",
         "Restarts mesh-host made, per service, since mesh-host first recorded the process.");
  for (const auto& [service, n] : s.restarts)
    out += fmt::format("mesh_host_restarts_total{{service=\"{}\"}} {}\n", escapeLabelValue(service),
                       n);
  header(out, "mesh_host_declaration_valid", "gauge",
         "0 while the declaration file does not load and the last good one stays in force.");
  out += fmt::format("mesh_host_declaration_valid {}\n", s.declarationValid ? 1 : 0);
  if (s.watchedDirs) {
    header(out, "mesh_host_watched_directories", "gauge",
           "Directories the agent watches for drift (inotify).");
    out += fmt::format("mesh_host_watched_directories {}\n", *s.watchedDirs);
    header(out, "mesh_host_unwatched_resources", "gauge",
           "Managed resources no watch covers: their drift is repaired at the interval only.");
    out += fmt::format("mesh_host_unwatched_resources {}\n", *s.unwatched);
    header(out, "mesh_host_drift_repairs_total", "counter",
           "Cycles started by a drift event that repaired something.");
    out += fmt::format("mesh_host_drift_repairs_total {}\n", *s.driftRepairs);
  }
  header(out, "mesh_host_paused", "gauge",
         "1 while mesh-host pause is in force: the agent's cycles only plan.");
  out += fmt::format("mesh_host_paused {}\n", s.paused ? 1 : 0);
  if (s.pendingChanges) {
    header(out, "mesh_host_pending_changes", "gauge",
           "Changes the agent's last cycle that only planned (paused, --noop) found waiting.");
    out += fmt::format("mesh_host_pending_changes {}\n", *s.pendingChanges);
  }
  header(out, "mesh_host_failures", "gauge", "Resources that failed in the last cycle.");
  out += fmt::format("mesh_host_failures {}\n", s.tally.failed);
  return out;
}

MetricsSnapshot metricsSnapshot(const apply::CycleReport& report, state::Store& store,
                                const std::string& node) {
  MetricsSnapshot s;
  s.node = node;
  s.cycle = report.cycle;
  s.durationSeconds = static_cast<double>(report.ms) / 1000.0;
  s.tally = report.tally;
  s.interrupted = report.interrupted;
  int64_t finishedMs = unixNowMs();
  if (auto last = store.lastCycle(); last && last->cycle == report.cycle) {
    if (last->finishedAt != 0) finishedMs = last->finishedAt;
    s.generation = last->generation;
  }
  s.lastCycleTimestampSeconds = static_cast<double>(finishedMs) / 1000.0;

  s.declarationValid = !state::declarationError(store.stateDir());
  try {
    s.paused = state::readPause(store.stateDir()).has_value();
  } catch (const Error&) {
    s.paused = true;  // there, but unreadable: the agent keeps it in force
  }
  if (const auto pending = state::pendingNote(store.stateDir()))
    s.pendingChanges = static_cast<int64_t>(pending->changes.size());
  if (const auto drift = state::driftNote(store.stateDir())) {
    s.watchedDirs = drift->watchedDirs;
    s.unwatched = drift->unwatched;
    s.driftRepairs = drift->repairs;
  }
  for (const auto& [id, c] : apply::computeChurn(store.history("", 0), report.cycle))
    s.churning += c.churning;
  std::map<std::string, int64_t> restarts;
  for (const auto& [id, rec] : store.loadRecords())
    if (auto info = apply::processInfo(rec)) restarts[info->service] += info->restarts;
  s.restarts.assign(restarts.begin(), restarts.end());
  return s;
}

apply::CycleReport lastAppliedReport(state::Store& store) {
  apply::CycleReport r;
  if (const auto last = store.lastFinishedCycle()) {
    r.cycle = last->cycle;
    r.tally = last->tally;
    r.ms = last->ms;
  }
  return r;
}

void writeMetrics(const std::string& path, const apply::CycleReport& report, state::Store& store,
                  const std::string& node) {
  atomicWrite(path, renderMetrics(metricsSnapshot(report, store, node)), 0644);
}

}  // namespace mesh::cli
