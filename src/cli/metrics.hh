// Metrics for node_exporter's textfile collector: one small file, replaced
// atomically after every cycle (`apply --metrics FILE`, `run --metrics FILE`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apply/cycle.hh"
#include "state/store.hh"

namespace mesh::cli {

// Everything the file says, gathered from a cycle report and the store.
struct MetricsSnapshot {
  std::string node;
  int64_t cycle = 0;
  int64_t generation = 0;
  double durationSeconds = 0;
  double lastCycleTimestampSeconds = 0;  // unix seconds when the cycle finished
  Tally tally;
  bool interrupted = false;
  int64_t churning = 0;
  // False while the agent keeps the last good declaration because its file does
  // not load (<state-dir>/declaration-error).
  bool declarationValid = true;
  // The agent's drift watch (state/drift_note.hh), when an agent runs.
  std::optional<int64_t> watchedDirs, unwatched, driftRepairs;
  // mesh-host pause is in force (state/pause.hh); what the agent's last cycle that
  // only planned (paused, run --noop) found it would change (state/pending_note.hh).
  bool paused = false;
  std::optional<int64_t> pendingChanges;
  // Restarts mesh-host made, per service, from the process records; sorted by name.
  std::vector<std::pair<std::string, int64_t>> restarts;
};

// Prometheus text exposition format: \ " and newline escaped in a label value.
std::string escapeLabelValue(std::string_view value);

// The file's text: HELP and TYPE for every metric, then its samples.
std::string renderMetrics(const MetricsSnapshot& s);

MetricsSnapshot metricsSnapshot(const apply::CycleReport& report, state::Store& store,
                                const std::string& node);

// Writes the metrics of the cycle just finished to `path` (temp file + fsync +
// rename, mode 0644), so the collector never reads half a file. Throws mesh::Error.
void writeMetrics(const std::string& path, const apply::CycleReport& report, state::Store& store,
                  const std::string& node);

// The last finished cycle as the store holds it (number, counts, duration), for the
// metrics written after a cycle that only planned.
apply::CycleReport lastAppliedReport(state::Store& store);

}  // namespace mesh::cli
