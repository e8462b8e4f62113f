#include "fleet/rollout_wait.hh"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "fleet/enroll.hh"
#include "fleet/rollout_judge.hh"
#include "util/clock.hh"
#include "util/error.hh"

namespace mesh::fleet {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often, at most, the wait looks up from the watch: the driver's lock is renewed and
// an abort noticed this often.
constexpr milliseconds kLookUp{2000};

std::string durationText(int64_t ms) {
  if (ms % 60'000 == 0) return fmt::format("{}m", ms / 60'000);
  return ms % 1000 == 0 ? fmt::format("{}s", ms / 1000) : fmt::format("{}ms", ms);
}

struct Watched {
  RolloutTarget target;
  NodeWatch watch;
  std::optional<NodeStatus> status;  // the last one that counts
  std::string reason = "no status on a live lease (the node is down or never started)";
  bool healthy = false;
};

}  // namespace

WaveOutcome waitForWave(EtcdClient& etcd, const FleetKeys& keys, const PushReport& wave,
                        const RolloutOptions& options,
                        const std::vector<trust::OperatorPublicKey>& trusted,
                        const std::function<bool()>& stillOurs,
                        const std::function<void(const std::string&)>& say) {
  const auto deadline = Clock::now() + milliseconds(options.healthyDeadlineMs);
  std::map<std::string, Watched> nodes;
  for (const auto& n : wave.nodes) {
    if (n.result == PushedNode::Result::Conflict)
      return {WaveOutcome::Kind::Halted, fmt::format("{}: {}", n.node, n.detail)};
    nodes[n.node].target = RolloutTarget{wave.serial, n.digest, n.value};
  }
  std::map<std::string, std::optional<EtcdKeyValue>> enrollments;
  VerifiedMemo verified;
  const auto see = [&](const std::string& node, const EtcdKeyValue& kv) {
    const auto it = nodes.find(node);
    if (it == nodes.end()) return;
    const NodeTrust t = checkNode(keys.cluster, node, enrollments[node], {kv}, trusted, &verified);
    if (t.verdict != NodeTrust::Verdict::Verified) {
      it->second.reason = fmt::format("{}: its status does not verify: not counted", node);
      return;
    }
    try {
      NodeStatus s = decodeStatus(kv.value, kv.key);
      if (s.lease != 0 && s.lease != kv.lease) return;  // put back from an earlier lease
      it->second.status = std::move(s);
    } catch (const InputError& e) {
      it->second.reason = e.what();
    }
  };
  const auto read = [&] {
    const auto range = etcd.getPrefix(keys.nodesPrefix());
    for (const auto& [node, k] : nodesIn(range, keys)) {
      enrollments[node] = k.enrollment;
      if (k.status) see(node, *k.status);
    }
    return range.revision + 1;
  };
  int64_t from = read();
  while (true) {
    // Judge every node by its last status at the clock now: a node healthy on the clock
    // alone gets there without a new status.
    const int64_t nowMs = unixNowMs();
    std::optional<int64_t> nextDueMs;
    bool all = true;
    for (auto& [node, w] : nodes) {
      if (w.healthy) continue;
      if (!w.status) {
        all = false;
        continue;
      }
      const auto v = judgeRolloutNode(*w.status, w.target, w.watch, nowMs, options.minHealthyMs);
      switch (v.kind) {
        case RolloutVerdict::Kind::Halt:
          return {WaveOutcome::Kind::Halted, v.reason};
        case RolloutVerdict::Kind::Healthy:
          w.healthy = true;
          if (say)
            say(fmt::format("{} healthy: serial {} applied, up for {}", node, wave.serial,
                            durationText(options.minHealthyMs)));
          break;
        case RolloutVerdict::Kind::Waiting:
          all = false;
          w.reason = v.reason;
          if (v.healthyAtMs) nextDueMs = std::min(nextDueMs.value_or(v.healthyAtMs), v.healthyAtMs);
          break;
      }
    }
    if (all) return {WaveOutcome::Kind::Healthy, ""};
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      for (const auto& [node, w] : nodes)
        if (!w.healthy)
          return {WaveOutcome::Kind::Halted,
                  fmt::format("{} missed the healthy deadline of {}: {}", node,
                              durationText(options.healthyDeadlineMs), w.reason)};
    }
    auto wait = std::min(left, kLookUp);
    if (nextDueMs) wait = std::min(wait, milliseconds(std::max<int64_t>(1, *nextDueMs - nowMs)));
    try {
      etcd.watch(
          keys.nodesPrefix(), from,
          [&](const std::vector<EtcdEvent>& events) {
            bool changed = false;
            for (const auto& ev : events) {
              from = std::max(from, ev.kv.modRevision + 1);
              const auto split = keys.splitNodeKey(ev.kv.key);
              if (!split || !nodes.count(split->first)) continue;
              if (ev.type == EtcdEvent::Type::Put && split->second == "enrollment")
                enrollments[split->first] = ev.kv;
              if (ev.type == EtcdEvent::Type::Put && split->second == "status") {
                see(split->first, ev.kv);
                changed = true;
              }
              if (ev.type == EtcdEvent::Type::Delete && split->second == "status") {
                auto& w = nodes[split->first];
                w.status.reset();
                w.watch.healthySinceMs.reset();
                w.reason = fmt::format("{} is down: its status went with its lease", split->first);
                changed = true;
              }
            }
            return !changed;  // judge again at once
          },
          wait, EtcdClient::WatchScope::Prefix);
    } catch (const EtcdCompacted&) {
      from = read();
    }
    if (stillOurs && !stillOurs()) return {WaveOutcome::Kind::Aborted, ""};
  }
}

}  // namespace mesh::fleet
