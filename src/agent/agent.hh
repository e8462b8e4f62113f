// The agent (`mesh-host run`): a cycle at start, then every interval plus a
// random splay, at once on SIGHUP or when the declaration file changes; stops
// between resources on SIGTERM/SIGINT. One thread waits for events (signals,
// inotify, timers) and speaks to systemd; each cycle runs on a thread of its own,
// so a long cycle never silences the watchdog or delays a stop request.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "agent/fleet_link.hh"
#include "agent/last_good.hh"
#include "agent/locked_run.hh"
#include "agent/log.hh"
#include "apply/context.hh"
#include "apply/cycle.hh"

namespace mesh::agent {

struct AgentOptions {
  std::string declarationPath;  // absolute; unused in fleet mode
  apply::Settings settings;     // plan = false
  std::chrono::milliseconds interval{std::chrono::minutes(5)};
  std::chrono::milliseconds splay{std::chrono::seconds(30)};
  bool verbose = false;  // log unchanged outcomes too
  // `run --noop`: every cycle only plans (as while paused, state/pause.hh).
  bool noop = false;

  LastGoodDeclaration::Loader load;
  // Rendering, from the command line layer, so the agent logs what `apply` prints
  // (what `plan` prints, for a cycle that only planned: `plan` true).
  std::function<std::string(const apply::ResourceResult&, bool plan)> outcomeLine;
  std::function<std::string(const apply::CycleReport&, bool plan)> summaryLine;
  // Called after every cycle that ran, under the state lock with its store
  // (metrics); may be empty. An error it throws is logged as a warning.
  AfterCycle afterCycle;
  // The same after a cycle that only planned (paused, --noop): its report is what
  // apply would do, not what the node holds.
  AfterCycle afterPlan;
  // Fleet mode: the declaration comes from etcd, not from declarationPath.
  std::optional<FleetOptions> fleet;
};

// Runs until SIGTERM or SIGINT; returns the exit code (0). Throws mesh::Error
// when it cannot set up (the declaration's directory cannot be watched …).
int runAgent(const AgentOptions& options, Logger& log);

}  // namespace mesh::agent
