// What the agent looks at of its services between cycles, and the health it judges
// them by — pure: no thread, no clock read (the watch, agent/service_watch.hh, brings
// both). Every `process` and `service` resource of the declaration in force, with what
// the state store counts of its restarts (as `mesh-host status` counts them), its
// health check when it declares one (`health = { exec, interval, timeout }`), or READY=1
// when it is a Type=notify process without one.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "agent/health_probe.hh"
#include "decl/model.hh"
#include "fleet/protocol.hh"
#include "state/store.hh"
#include "supervise/supervisor.hh"

namespace mesh::agent {

using WatchClock = std::chrono::steady_clock;

struct WatchedService {
  std::string id;
  std::string unit;
  int64_t restarts = 0;             // mesh-host's (the record's)
  int64_t crashRestartsBefore = 0;  // its supervisor's before mesh-host's last (re)start
  bool notify = false;              // Type=notify without a check: READY=1 is healthy
  std::optional<Probe> probe;       // its declared check, ready to run
  std::string probeError;           // why the check cannot run (an unknown User=): unhealthy
  std::chrono::milliseconds interval{0};
  bool checked() const { return notify || probe || !probeError.empty(); }
};

// The services of `d`, sorted by id. A check's {bundle} and {root} are replaced as in
// unit values.
std::vector<WatchedService> watchedServices(const decl::Declaration& d, const std::string& stateDir,
                                            const std::string& root);
// Their restart counts as their records hold them (after a cycle, with its store).
void countRestarts(std::vector<WatchedService>& services, state::Store& store);

// The health of one service's run, over time.
struct HealthTrack {
  int64_t runSinceUs = -1;  // the run judged (its supervisor's start); -1 none yet
  bool running = false;
  bool passed = false;  // a check passed since the run started
  WatchClock::time_point runSeen{};
  WatchClock::time_point due{};  // the next check
  std::string health, reason;
};

// A check that has not passed yet fails the run only once it has been up this many
// intervals: a service may take a moment to answer after it starts.
inline constexpr int kStartingIntervals = 3;

// A new look: a new run (another start) makes it "starting" again and its check due now.
void seeRun(HealthTrack& t, const WatchedService& w, const supervise::ServiceState& st,
            WatchClock::time_point now);
// A check's result, for the run it was started on (`runSinceUs`); a result for an older
// run is dropped.
void checked(HealthTrack& t, const WatchedService& w, int64_t runSinceUs, const ProbeResult& r,
             WatchClock::time_point now);

fleet::NodeStatus::Service serviceStatus(const WatchedService& w, const supervise::ServiceState& st,
                                         const HealthTrack& t);

}  // namespace mesh::agent
