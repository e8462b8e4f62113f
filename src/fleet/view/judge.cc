#include "fleet/view/judge.hh"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "fleet/node_signed.hh"
#include "fleet/view/words.hh"
#include "util/error.hh"
#include "util/time_text.hh"

namespace mesh::fleet {

namespace {

// Convergence by content: a refusal counts when it names the very value pushed now, and
// a node is behind unless its status carries the pushed digest and serial.
bool refusedWanted(const NodeView& v) {
  return v.status && v.status->refused && !v.wantedValue.empty() &&
         v.status->refused->valueDigest == v.wantedValue;
}

bool behindWanted(const NodeView& v) {
  if (v.wantedValue.empty()) return false;  // nothing pushed
  if (!v.wanted) return true;               // pushed, but not a statement it could apply
  return v.status->declarationDigest != v.wanted->declarationDigest ||
         v.status->serial != v.wanted->serial;
}

// The precedence of docs/fleet.md: forged, unenrolled, down, refused, failing, paused,
// behind, churning, converged.
NodeState stateOf(const NodeView& v) {
  if (v.trust == "forged") return NodeState::Forged;
  if (v.trust == "unenrolled") return NodeState::Unenrolled;
  if (!v.up) return NodeState::Down;
  if (!v.status) return NodeState::Failing;  // its status key does not decode
  if (refusedWanted(v)) return NodeState::Refused;
  if (isFailing(*v.status)) return NodeState::Failing;
  if (v.status->paused) return NodeState::Paused;
  if (behindWanted(v)) return NodeState::Behind;
  if (!v.status->churning.empty()) return NodeState::Churning;
  return NodeState::Converged;
}
// What the keys say, before any trust is given to what the node signed.
NodeView viewOf(const std::string& node, const NodeKeys& k, const DecodedValues& decoded,
                std::optional<PushedDeclaration>& pushed) {
  NodeView v;
  v.node = node;
  v.up = k.status.has_value();
  if (k.declaration) {
    v.wantedRevision = k.declaration->modRevision;
    if (const auto it = decoded.find(k.declaration->value); it != decoded.end()) {
      v.wantedValue = it->second.digest;
      pushed = it->second.pushed;
      v.wanted = it->second.statement;
    } else {
      v.wantedValue = valueDigest(k.declaration->value);
      try {
        pushed = decodePushed(k.declaration->value, k.declaration->key);
        v.wanted = peekStatement(*pushed, k.declaration->key);
      } catch (const InputError& e) {
        v.unreadable.push_back(e.what());
      }
    }
  }
  if (const auto& kv = k.status ? k.status : k.seen) {
    try {
      v.status = decodeStatus(kv->value, kv->key);
    } catch (const InputError& e) {
      v.unreadable.push_back(e.what());
    }
  }
  return v;
}

// What the node signed, checked against its enrollment: a forged or unenrolled node shows
// nothing from its statuses; then whether it is alive (downReason).
void checkTrust(NodeView& v, const std::string& cluster, const NodeKeys& k,
                const std::vector<trust::OperatorPublicKey>& trusted, int64_t now,
                VerifiedMemo* memo) {
  // Only what is judged by is checked: the live status, else the seen copy; the heartbeat
  // only when the status does not name the live lease it sits on (statusOnItsLease).
  const bool onItsLease = statusOnItsLease(k, v.status);
  std::vector<EtcdKeyValue> signedKeys;
  for (const auto* kv : {k.status ? &k.status : &k.seen, onItsLease ? nullptr : &k.heartbeat})
    if (kv && *kv) signedKeys.push_back(**kv);
  const auto t = checkNode(cluster, v.node, k.enrollment, signedKeys, trusted, memo);
  std::optional<Heartbeat> beat;
  if (t.verdict != NodeTrust::Verdict::Verified) {
    v.trust = t.verdict == NodeTrust::Verdict::Forged ? "forged" : "unenrolled";
    v.trustReason = t.reason;
    v.status.reset();
    v.up = false;
  } else if (k.heartbeat && !onItsLease) {
    try {
      beat = decodeHeartbeat(k.heartbeat->value, k.heartbeat->key);
    } catch (const InputError& e) {
      v.unreadable.push_back(e.what());
    }
  }
  if (v.up) {
    v.downReason = downReason(k, v.status, beat, now);
    v.up = v.downReason.empty();
    // Its lease holds: seen now; an older agent's heartbeat says when it beat.
    if (v.up) v.heartbeatMs = onItsLease || beat->lease != 0 ? now : beat->atMs;
  }
}

// Why a node is not converged, one line per reason.
std::vector<std::string> reasonsOf(const NodeView& v, int64_t now) {
  std::vector<std::string> out;
  for (const auto& u : v.unreadable) out.push_back("unreadable: " + u);
  if (!v.trust.empty()) {
    out.push_back(v.trust + ": " + v.trustReason);
    return out;
  }
  if (!v.downReason.empty()) out.push_back("down: " + v.downReason);
  const auto* s = v.status ? &*v.status : nullptr;
  if (!v.up) {
    out.push_back(s ? fmt::format("down: no status since {} ({}); it had applied serial {} ({})",
                                  isoTime(s->publishedAtMs), agoText(s->publishedAtMs, now),
                                  serialText(s->serial), digestText(s->declarationDigest))
                    : "down: never seen (no status or seen key)");
    return out;
  }
  if (!s) return out;
  if (refusedWanted(v))
    out.push_back(fmt::format("refused serial {} (revision {}) at {}: {}",
                              serialText(s->refused->serial), s->refused->revision,
                              isoTime(s->refused->atMs), s->refused->reason));
  for (const auto& [id, reason] : s->failing)
    out.push_back(fmt::format("failed {}: {}", id, reason));
  if (s->failing.empty() && s->failed > 0)
    out.push_back(fmt::format("{} resource(s) failed in cycle {}", s->failed, s->cycle));
  if (!s->cycleError.empty()) out.push_back("cycle error: " + s->cycleError);
  if (s->paused)
    out.push_back(fmt::format("paused by {} (uid {}) since {}: {}; {} change(s) waiting",
                              s->paused->user, s->paused->uid, isoTime(s->paused->sinceMs),
                              s->paused->reason, s->pending));
  else if (s->noop && s->pending > 0)
    out.push_back(fmt::format("noop: run --noop; {} change(s) waiting", s->pending));
  if (behindWanted(v) && !refusedWanted(v))  // a refusal says why already
    out.push_back(fmt::format(
        "behind: applied serial {} ({}); serial {} ({}) is pushed (revision {})",
        serialText(s->serial), digestText(s->declarationDigest),
        v.wanted ? std::to_string(v.wanted->serial) : "-",
        v.wanted ? digestText(v.wanted->declarationDigest) : "unreadable", v.wantedRevision));
  if (!s->churning.empty())
    out.push_back(fmt::format("churning: {}", fmt::join(s->churning, ", ")));
  return out;
}

// The error an operator acts on first: what makes the node untrusted, its refusal, the
// first failed resource, the cycle's own error, a key that does not decode.
std::string lastErrorOf(const NodeView& v) {
  if (!v.trust.empty()) return v.trustReason;
  if (const auto* s = v.status ? &*v.status : nullptr) {
    if (refusedWanted(v)) return s->refused->reason;
    if (!s->failing.empty()) return s->failing.front().first + ": " + s->failing.front().second;
    if (!s->cycleError.empty()) return s->cycleError;
  }
  return v.unreadable.empty() ? "" : v.unreadable.front();
}
}  // namespace

DecodedValues decodeDistinct(const std::map<std::string, NodeKeys>& known) {
  DecodedValues out;
  for (const auto& [node, k] : known) {
    if (!k.declaration || out.count(k.declaration->value)) continue;
    try {
      auto pushed = decodePushed(k.declaration->value, k.declaration->key);
      auto st = peekStatement(pushed, k.declaration->key);
      out.emplace(k.declaration->value, DecodedValue{std::move(pushed), std::move(st),
                                                     valueDigest(k.declaration->value)});
    } catch (const InputError&) {
      // Decoded again for this node, to say why under its own key.
    }
  }
  return out;
}

NodeView judgeNode(const std::string& node, const NodeKeys& k, const DecodedValues& decoded,
                   std::optional<PushedDeclaration>& pushed, const std::string& cluster,
                   const std::vector<trust::OperatorPublicKey>& trusted, int64_t nowMs,
                   VerifiedMemo* memo) {
  NodeView v = viewOf(node, k, decoded, pushed);
  checkTrust(v, cluster, k, trusted, nowMs, memo);
  v.state = stateOf(v);
  if (v.state != NodeState::Converged) {
    v.reasons = reasonsOf(v, nowMs);
    v.lastError = lastErrorOf(v);
  }
  return v;
}

const char* stateName(NodeState s) {
  switch (s) {
    case NodeState::Forged:
      return "forged";
    case NodeState::Unenrolled:
      return "unenrolled";
    case NodeState::Down:
      return "down";
    case NodeState::Refused:
      return "refused";
    case NodeState::Failing:
      return "failing";
    case NodeState::Paused:
      return "paused";
    case NodeState::Behind:
      return "behind";
    case NodeState::Churning:
      return "churning";
    case NodeState::Converged:
      return "converged";
  }
  return "unknown";
}

int64_t NodeView::lastSeenMs() const {
  if (heartbeatMs) return heartbeatMs;
  return status ? status->publishedAtMs : 0;
}

size_t FleetView::count(NodeState s) const {
  return static_cast<size_t>(
      std::count_if(nodes.begin(), nodes.end(), [s](const NodeView& n) { return n.state == s; }));
}

bool statusOnItsLease(const NodeKeys& k, const std::optional<NodeStatus>& status) {
  return k.status && status && status->lease != 0 && status->lease == k.status->lease;
}

std::string downReason(const NodeKeys& k, const std::optional<NodeStatus>& status,
                       const std::optional<Heartbeat>& beat, int64_t nowMs) {
  if (!k.status) return "";
  if (statusOnItsLease(k, status)) return "";
  const int64_t lease = k.status->lease;
  const int64_t staleMs = std::chrono::milliseconds(kHeartbeatStale).count();
  if (!beat) return "its status is on a live lease but it has no heartbeat";
  if (beat->lease == 0 && nowMs - beat->atMs > staleMs)
    return fmt::format(
        "its status is on a live lease but its newest heartbeat is from {} ({}), older than {} s",
        isoTime(beat->atMs), agoText(beat->atMs, nowMs), kHeartbeatStale.count());
  if (beat->lease != 0 && beat->lease != k.heartbeat->lease)
    return fmt::format(
        "its heartbeat names lease {:x} but sits on lease {:x}: put back from an earlier lease",
        beat->lease, k.heartbeat->lease);
  if (beat->lease != 0 && beat->lease != lease)
    return fmt::format(
        "its status sits on lease {:x}, not on the lease of its heartbeat ({:x}): put back from "
        "an earlier lease",
        lease, beat->lease);
  if (status && status->lease != 0 && status->lease != lease)
    return fmt::format(
        "its status names lease {:x} but sits on lease {:x}: put back from an earlier lease",
        status->lease, lease);
  return "";
}

}  // namespace mesh::fleet
