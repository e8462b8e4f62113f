// AgentCore and drift: the drift watch's events debounced into a repair cycle, the
// events during a cycle sorted into its own writes and someone else's, and the back-off
// from an outside writer that keeps undoing a repair.
#include "agent/core.hh"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "state/drift_note.hh"
#include "util/clock.hh"

namespace mesh::agent {

// Managed paths changed: drift, repaired once the burst is quiet for kDriftQuiet (and
// the back-off allows). Events while a cycle runs are kept for rewatch().
void AgentCore::driftEvents(Clock::time_point now) {
  if (!drift_) return;
  auto drifted = drift_->drain();
  if (running_) {
    driftDuringCycle_.merge(drifted);
    return;
  }
  if (!drifted.empty()) driftSeen(now, drifted);
}

void AgentCore::driftSeen(Clock::time_point now,
                          const std::map<std::string, std::string>& drifted) {
  const auto& [id, path] = *drifted.begin();
  driftWhat_ = fmt::format("{} ({})", id, path);
  if (drifted.size() > 1) driftWhat_ += fmt::format(" and {} more", drifted.size() - 1);
  if (!driftDebounce_.deadline()) driftFirst_ = now;
  driftDebounce_.poke(now);
}

// After each cycle. Events during it on what it did not change are someone else's:
// drift. On what it changed they are mostly its own writes — dropped, except after a
// repair by event, where an outside writer may have put its content back meanwhile: one
// check cycle follows, a no-op unless someone wrote. A repair that keeps being undone
// (an outside writer that fights back) backs off.
void AgentCore::rewatch(Clock::time_point now, const LockedRun& run) {
  if (!drift_) return;
  auto during = std::exchange(driftDuringCycle_, {});
  during.merge(drift_->drain());
  if (current()) drift_->update(*current(), o_.settings.root);
  // A cycle that only planned repaired nothing and wrote nothing: every event during
  // it is someone else's.
  const bool applied = run.report && run.planned.empty();
  const bool repair = runningTrigger_.starts_with("drift: ") && applied && run.report->anyChange();
  if (repair) backOff(now);
  std::set<std::string> changed;
  if (!during.empty() && applied)
    for (const auto& r : run.report->results)
      if (r.outcome.changed() || r.outcome.gone()) changed.insert(r.id);
  std::map<std::string, std::string> outside;
  for (const auto& [id, path] : during)
    if (repair || !changed.count(id)) outside.emplace(id, path);
  state::noteDrift(o_.settings.stateDir, {unixNowMs(), static_cast<int64_t>(drift_->watched()),
                                          static_cast<int64_t>(drift_->unwatched()), driftRepairs_,
                                          driftBackoff_.count()});
  if (outside.empty()) return;
  driftSeen(now, outside);
}

// A drift cycle repaired something.
void AgentCore::backOff(Clock::time_point now) {
  ++driftRepairs_;
  const bool again = now - lastDriftRepair_ < driftBackoff_ + kDriftFight;
  lastDriftRepair_ = now;
  quickRepairs_ = again ? quickRepairs_ + 1 : 0;
  if (quickRepairs_ < kDriftFightRepairs) {
    driftBackoff_ = {};
    driftNotBefore_ = now;
    return;
  }
  const auto cap = std::chrono::duration_cast<std::chrono::milliseconds>(o_.interval);
  driftBackoff_ =
      std::min(cap, driftBackoff_.count() ? driftBackoff_ * 2 : std::chrono::milliseconds(1000));
  driftNotBefore_ = now + driftBackoff_;
  log_.log(Level::Warning,
           fmt::format("{}: repaired again soon after the last repair (an "
                       "outside writer fights it); the next repair by event waits {} ms",
                       runningTrigger_, driftBackoff_.count()),
           {{"trigger", runningTrigger_}, {"backoff_ms", driftBackoff_.count()}});
}

}  // namespace mesh::agent
