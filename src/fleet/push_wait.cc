// `fleet push --wait`: convergence by content. A node has applied the push when its
// status carries the pushed declaration digest and serial (never by comparing etcd
// revisions: a wiped or replaced etcd starts its revisions again).
#include <fmt/format.h>

#include <chrono>
#include <map>

#include "fleet/enroll.hh"
#include "fleet/push.hh"
#include "util/error.hh"

namespace mesh::fleet {

namespace {

using Clock = std::chrono::steady_clock;

std::string durationText(std::chrono::milliseconds d) {
  return d.count() % 1000 == 0 ? fmt::format("{}s", d.count() / 1000)
                               : fmt::format("{}ms", d.count());
}

std::string serialText(const std::optional<int64_t>& s) {
  return s ? std::to_string(*s) : "-";
}

// What a node's status says of the pushed declaration; false while it has not got there.
bool judge(PushedNode& n, const PushReport& r, const NodeStatus& s) {
  const std::string& digest = n.digest.empty() ? r.digest : n.digest;  // --each: its own
  if (s.cycle > 0 && s.declarationDigest == digest && s.serial == r.serial) {
    n.outcome = isFailing(s) ? PushedNode::Outcome::Failed : PushedNode::Outcome::Applied;
    // The cycle that applied it, not a later one that found nothing left to do.
    const NodeStatus::AppliedCycle a = s.appliedCycle ? *s.appliedCycle : appliedCycleOf(s);
    n.detail = fmt::format(
        "serial {} ({}) in cycle {}: {} created, {} updated, {} unchanged, {} removed", r.serial,
        shortDigest(digest), a.cycle, a.created, a.updated, a.unchanged, a.removed);
    if (a.released) n.detail += fmt::format(", {} released", a.released);
    if (a.skipped) n.detail += fmt::format(", {} skipped", a.skipped);
    n.detail += fmt::format(", {} failed", a.failed);
    if (isFailing(s)) {
      if (a.cycle != s.cycle) n.detail += fmt::format("; its last cycle {}", s.cycle);
      for (const auto& [id, reason] : s.failing) n.detail += fmt::format("; {}: {}", id, reason);
      if (!s.cycleError.empty()) n.detail += "; cycle error: " + s.cycleError;
    }
    return true;
  }
  if (s.refused && !n.value.empty() && s.refused->valueDigest == n.value) {
    n.outcome = PushedNode::Outcome::Refused;
    n.detail = s.refused->reason;
    return true;
  }
  n.detail =
      fmt::format("its status shows serial {} ({}), not yet serial {} ({})", serialText(s.serial),
                  s.declarationDigest.empty() ? "none" : shortDigest(s.declarationDigest), r.serial,
                  shortDigest(digest));
  return false;
}

}  // namespace

void waitForNodes(EtcdClient& etcd, const FleetKeys& keys, PushReport& report,
                  std::chrono::milliseconds limit,
                  const std::vector<trust::OperatorPublicKey>& trusted) {
  const auto deadline = Clock::now() + limit;
  std::map<std::string, PushedNode*> pending;
  for (auto& n : report.nodes) {
    if (n.result == PushedNode::Result::Conflict) continue;
    pending.emplace(n.node, &n);
    n.detail = "down: no status on a live lease (the node is down or never started)";
  }
  // Each node's enrollment, as last read: what its status must be signed with.
  std::map<std::string, std::optional<EtcdKeyValue>> enrollments;
  VerifiedMemo verified;  // a node's enrollment is seen with each of its statuses
  const auto see = [&](const std::string& node, const EtcdKeyValue& kv) {
    const auto it = pending.find(node);
    if (it == pending.end()) return;
    const NodeTrust t = checkNode(keys.cluster, node, enrollments[node], {kv}, trusted, &verified);
    if (t.verdict != NodeTrust::Verdict::Verified) {
      it->second->detail =
          fmt::format("its status does not verify ({}): not counted",
                      t.verdict == NodeTrust::Verdict::Forged ? "forged" : "unenrolled") +
          (t.reason.empty() ? "" : "; " + t.reason);
      return;  // keep waiting for one the node signed
    }
    try {
      const NodeStatus s = decodeStatus(kv.value, kv.key);
      if (s.lease != 0 && s.lease != kv.lease) {
        it->second->detail = fmt::format(
            "its status names lease {:x} but sits on lease {:x} (put back from an earlier "
            "lease): not counted",
            s.lease, kv.lease);
        return;
      }
      if (judge(*it->second, report, s)) pending.erase(it);
    } catch (const InputError& e) {
      it->second->detail = e.what();  // a status we cannot read: keep waiting for a good one
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
  while (!pending.empty()) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    try {
      const bool done = etcd.watch(
          keys.nodesPrefix(), from,
          [&](const std::vector<EtcdEvent>& events) {
            for (const auto& ev : events) {
              from = std::max(from, ev.kv.modRevision + 1);
              const auto split = keys.splitNodeKey(ev.kv.key);
              if (ev.type == EtcdEvent::Type::Put && split && split->second == "enrollment")
                enrollments[split->first] = ev.kv;
              if (ev.type == EtcdEvent::Type::Put && split && split->second == "status")
                see(split->first, ev.kv);
              // Liveness is the lease: the status goes with it when the node dies or stops.
              if (ev.type == EtcdEvent::Type::Delete && split && split->second == "status")
                if (const auto it = pending.find(split->first); it != pending.end())
                  it->second->detail =
                      "down: its status went with its lease (the node stopped, died or lost "
                      "etcd)";
            }
            return !pending.empty();
          },
          left, EtcdClient::WatchScope::Prefix);
      if (!done) break;  // timed out
    } catch (const EtcdCompacted&) {
      from = read();  // the history is gone: read what is there now, watch on from it
    }
  }
  for (auto& [node, n] : pending) {
    n->outcome = PushedNode::Outcome::TimedOut;
    n->detail = fmt::format("after {}: {}", durationText(limit), n->detail);
  }
}

}  // namespace mesh::fleet
