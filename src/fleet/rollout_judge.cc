#include "fleet/rollout_judge.hh"

#include <fmt/format.h>

#include "fleet/statement.hh"

namespace mesh::fleet {

namespace {

RolloutVerdict waiting(std::string reason) {
  return {RolloutVerdict::Kind::Waiting, std::move(reason), 0};
}

RolloutVerdict halt(std::string reason) {
  return {RolloutVerdict::Kind::Halt, std::move(reason), 0};
}

std::string seconds(int64_t ms) {
  return ms % 1000 == 0 ? fmt::format("{}s", ms / 1000) : fmt::format("{}ms", ms);
}

}  // namespace

RolloutVerdict judgeRolloutNode(const NodeStatus& s, const RolloutTarget& t, NodeWatch& w,
                                int64_t nowMs, int64_t minHealthyMs) {
  const std::string& node = s.node;
  if (s.refused && !t.value.empty() && s.refused->valueDigest == t.value)
    return halt(fmt::format("{} refused serial {}: {}", node, t.serial, s.refused->reason));
  if (s.cycle == 0 || s.declarationDigest != t.digest || s.serial != t.serial) {
    w = NodeWatch{};
    return waiting(fmt::format("{} has not applied serial {} yet", node, t.serial));
  }
  if (!s.cycleError.empty())
    return halt(fmt::format("{} could not run a cycle: {}", node, s.cycleError));
  if (!s.failing.empty())
    return halt(
        fmt::format("{} failed {}: {}", node, s.failing.front().first, s.failing.front().second));
  if (s.failed > 0) return halt(fmt::format("{} failed {} resource(s)", node, s.failed));
  if (!s.churning.empty()) return halt(fmt::format("{} churns {}", node, s.churning.front()));

  const int64_t appliedAtMs = s.appliedCycle ? s.appliedCycle->atMs : s.lastCycleAtMs;
  if (!w.seenApplied) {
    w.seenApplied = true;
    for (const auto& svc : s.services) w.crashBaseline[svc.id] = svc.restartsByCrash;
  }
  std::string notYet;
  for (const auto& svc : s.services) {
    const std::string& unit = svc.unit.empty() ? svc.id : svc.unit;
    if (svc.health == "unhealthy")
      return halt(fmt::format("{} {} is unhealthy{}", node, unit,
                              svc.healthReason.empty() ? "" : ": " + svc.healthReason));
    const auto base = w.crashBaseline.find(svc.id);
    const int64_t since = base == w.crashBaseline.end() ? svc.restartsByCrash : base->second;
    if (svc.restartsByCrash > since)
      return halt(
          fmt::format("{} restarted {} {} time(s)", node, unit, svc.restartsByCrash - since));
    if (svc.running && svc.upSinceMs > appliedAtMs)
      return halt(
          fmt::format("{} {} started again after serial {} was applied (a crash or a "
                      "start by hand)",
                      node, unit, t.serial));
    if (notYet.empty() && !svc.running) notYet = fmt::format("{} {} is not running", node, unit);
    if (notYet.empty() && svc.health == "starting")
      notYet = fmt::format("{} {} is still starting", node, unit);
  }
  if (!notYet.empty()) {
    w.healthySinceMs.reset();
    return waiting(notYet);
  }
  if (!w.healthySinceMs) w.healthySinceMs = nowMs;
  const int64_t healthyAt = *w.healthySinceMs + minHealthyMs;
  if (nowMs >= healthyAt) return {RolloutVerdict::Kind::Healthy, "", healthyAt};
  return {RolloutVerdict::Kind::Waiting,
          fmt::format("{} healthy for {} of {}", node, seconds(nowMs - *w.healthySinceMs),
                      seconds(minHealthyMs)),
          healthyAt};
}

}  // namespace mesh::fleet
