#include "fleet/view.hh"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "fleet/enroll.hh"
#include "fleet/node_signed.hh"
#include "util/error.hh"
#include "util/json_schema.hh"
#include "util/text_safe.hh"
#include "util/time_text.hh"

namespace mesh::fleet {

using nlohmann::json;

namespace {

std::string serialText(const std::optional<int64_t>& v) {
  return v ? std::to_string(*v) : "-";
}

std::string digestText(const std::string& digest) {
  return digest.empty() ? "-" : shortDigest(digest);
}

json optionalInt(const std::optional<int64_t>& v) {
  return v ? json(*v) : json(nullptr);
}

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

// The precedence of docs/fleet.md: forged, unenrolled, down, refused, failing, behind,
// churning, converged.
NodeState stateOf(const NodeView& v) {
  if (v.trust == "forged") return NodeState::Forged;
  if (v.trust == "unenrolled") return NodeState::Unenrolled;
  if (!v.up) return NodeState::Down;
  if (!v.status) return NodeState::Failing;  // its status key does not decode
  if (refusedWanted(v)) return NodeState::Refused;
  if (isFailing(*v.status)) return NodeState::Failing;
  if (behindWanted(v)) return NodeState::Behind;
  if (!v.status->churning.empty()) return NodeState::Churning;
  return NodeState::Converged;
}

// The declaration values that decode, each decoded once: a push puts the same value to
// every node it names (read-only while nodes are judged in parallel).
struct DecodedValue {
  PushedDeclaration pushed;
  Statement statement;
  std::string digest;  // valueDigest()
};
using DecodedValues = std::unordered_map<std::string_view, DecodedValue>;

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

using VersionKey = std::pair<std::string, std::optional<int64_t>>;  // digest, serial

// Who pushed each (digest, serial): the newest statement naming it (of equally new ones,
// the last noted). Only that statement's signature is checked, once, in fill(): a fleet
// pushed node by node holds as many statements as nodes, and checking each newer one met
// on the way would cost a signature per node.
class PushedBy {
 public:
  explicit PushedBy(const std::vector<trust::OperatorPublicKey>& trusted) : trusted_(trusted) {}

  void note(const PushedDeclaration& p, const Statement& st, const std::string& where) {
    auto& best = by_[{st.declarationDigest, st.serial}];
    if (best.pushed && best.statement->pushedAtMs > st.pushedAtMs) return;
    best = {&p, &st, &where};
  }

  void fill(VersionView& v) const {
    if (v.digest.empty()) return;
    const auto it = by_.find({v.digest, v.serial});
    if (it == by_.end()) return;
    v.pushedBy = it->second.statement->pushedBy;
    v.pushedAtMs = it->second.statement->pushedAtMs;
    v.pushedVerified = verified(*it->second.pushed, *it->second.where);
  }

 private:
  // Pointers into the range and the views, which outlive this.
  struct Newest {
    const PushedDeclaration* pushed = nullptr;
    const Statement* statement = nullptr;
    const std::string* where = nullptr;
  };
  bool verified(const PushedDeclaration& p, const std::string& where) const {
    try {
      verifySignedStatement(p, where, trusted_);
      return true;
    } catch (const InputError&) {
      return false;
    }
  }
  const std::vector<trust::OperatorPublicKey>& trusted_;
  std::map<VersionKey, Newest> by_;
};

std::vector<VersionView> versionsOf(const std::vector<NodeView>& views, const PushedBy& pushed) {
  std::map<VersionKey, std::vector<std::string>> by;
  for (const auto& v : views) {
    const auto* s = v.status ? &*v.status : nullptr;
    by[{s ? s->declarationDigest : "", s ? s->serial : std::nullopt}].push_back(v.node);
  }
  std::vector<VersionView> out;
  for (auto& [k, nodes] : by) {
    VersionView version;
    version.digest = k.first;
    version.serial = k.second;
    version.nodes = std::move(nodes);
    pushed.fill(version);
    out.push_back(std::move(version));
  }
  std::stable_sort(out.begin(), out.end(), [](const VersionView& a, const VersionView& b) {
    return a.nodes.size() > b.nodes.size();
  });
  return out;
}

json nodeJson(const NodeView& v) {
  const auto* s = v.status ? &*v.status : nullptr;
  json failing = json::array();
  json refused = nullptr;
  if (s) {
    for (const auto& [id, reason] : s->failing) failing.push_back({{"id", id}, {"reason", reason}});
    if (s->refused)
      refused = {{"revision", s->refused->revision},
                 {"serial", optionalInt(s->refused->serial)},
                 {"reason", s->refused->reason},
                 {"at_ms", s->refused->atMs},
                 {"value_digest", s->refused->valueDigest}};
  }
  const int64_t lastSeen = v.lastSeenMs();
  return {{"node", v.node},
          {"state", stateName(v.state)},
          {"up", v.up},
          {"trust", v.trust.empty() ? "verified" : v.trust},
          {"trust_reason", v.trustReason},
          {"wanted_serial", v.wanted ? json(v.wanted->serial) : json(nullptr)},
          {"wanted_digest", v.wanted ? json(v.wanted->declarationDigest) : json(nullptr)},
          {"applied_digest",
           s && !s->declarationDigest.empty() ? json(s->declarationDigest) : json(nullptr)},
          {"wanted_revision", v.wantedRevision ? json(v.wantedRevision) : json(nullptr)},
          {"applied_serial", optionalInt(s ? s->serial : std::nullopt)},
          {"applied_revision", s ? json(s->revision) : json(nullptr)},
          {"failed", s ? s->failed : 0},
          {"failing", std::move(failing)},
          {"churning", s ? json(s->churning) : json::array()},
          {"refused", std::move(refused)},
          {"cycle_error", s ? s->cycleError : ""},
          {"last_seen_ms", lastSeen ? json(lastSeen) : json(nullptr)},
          {"version", s ? s->version : ""},
          {"cycle", s ? s->cycle : 0},
          {"summary",
           {{"created", s ? s->created : 0},
            {"updated", s ? s->updated : 0},
            {"unchanged", s ? s->unchanged : 0},
            {"removed", s ? s->removed : 0},
            {"released", s ? s->released : 0},
            {"skipped", s ? s->skipped : 0},
            {"failed", s ? s->failed : 0}}},
          {"unreadable", v.unreadable},
          {"reasons", v.reasons},
          {"last_error", v.lastError}};
}

// One node's object as jsonOut(nodeJson(v)) writes it: its keys in nlohmann's order (a
// std::map's, sorted), strings escaped as nlohmann escapes them (tests/unit/fleet:
// FleetView.TheJsonTextIsTheJsonTreeDumped).
class JsonText {
 public:
  std::string out;

  void str(std::string_view v) {
    // Anything beyond ASCII is written as the tree's writer writes it (invalid UTF-8
    // replaced, C1 controls escaped: util/text_safe.hh).
    if (std::any_of(v.begin(), v.end(),
                    [](char c) { return static_cast<unsigned char>(c) >= 0x7f; })) {
      out += jsonString(v);
      return;
    }
    out += '"';
    for (const char c : v) switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20)
            out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
          else
            out += c;
      }
    out += '"';
  }
  void num(int64_t v) { out += std::to_string(v); }
  void opt(const std::optional<int64_t>& v) { v ? num(*v) : null(); }
  void null() { out += "null"; }
  void boolean(bool v) { out += v ? "true" : "false"; }
  void strings(const std::vector<std::string>& list) {
    out += '[';
    for (size_t i = 0; i < list.size(); ++i) {
      if (i) out += ',';
      str(list[i]);
    }
    out += ']';
  }
  // "name": — the first of an object when `first`.
  void key(const char* name, bool first = false) {
    if (!first) out += ',';
    out += '"';
    out += name;
    out += "\":";
  }
};

void nodeText(JsonText& o, const NodeView& v) {
  const auto* s = v.status ? &*v.status : nullptr;
  o.out += '{';
  o.key("applied_digest", true);
  s && !s->declarationDigest.empty() ? o.str(s->declarationDigest) : o.null();
  o.key("applied_revision");
  s ? o.num(s->revision) : o.null();
  o.key("applied_serial");
  o.opt(s ? s->serial : std::nullopt);
  o.key("churning");
  o.strings(s ? s->churning : std::vector<std::string>{});
  o.key("cycle");
  o.num(s ? s->cycle : 0);
  o.key("cycle_error");
  o.str(s ? s->cycleError : "");
  o.key("failed");
  o.num(s ? s->failed : 0);
  o.key("failing");
  o.out += '[';
  if (s)
    for (size_t i = 0; i < s->failing.size(); ++i) {
      if (i) o.out += ',';
      o.out += '{';
      o.key("id", true);
      o.str(s->failing[i].first);
      o.key("reason");
      o.str(s->failing[i].second);
      o.out += '}';
    }
  o.out += ']';
  o.key("last_error");
  o.str(v.lastError);
  o.key("last_seen_ms");
  const int64_t lastSeen = v.lastSeenMs();
  lastSeen ? o.num(lastSeen) : o.null();
  o.key("node");
  o.str(v.node);
  o.key("reasons");
  o.strings(v.reasons);
  o.key("refused");
  if (s && s->refused) {
    o.out += '{';
    o.key("at_ms", true);
    o.num(s->refused->atMs);
    o.key("reason");
    o.str(s->refused->reason);
    o.key("revision");
    o.num(s->refused->revision);
    o.key("serial");
    o.opt(s->refused->serial);
    o.key("value_digest");
    o.str(s->refused->valueDigest);
    o.out += '}';
  } else {
    o.null();
  }
  o.key("state");
  o.str(stateName(v.state));
  o.key("summary");
  o.out += '{';
  o.key("created", true);
  o.num(s ? s->created : 0);
  o.key("failed");
  o.num(s ? s->failed : 0);
  o.key("released");
  o.num(s ? s->released : 0);
  o.key("removed");
  o.num(s ? s->removed : 0);
  o.key("skipped");
  o.num(s ? s->skipped : 0);
  o.key("unchanged");
  o.num(s ? s->unchanged : 0);
  o.key("updated");
  o.num(s ? s->updated : 0);
  o.out += '}';
  o.key("trust");
  o.str(v.trust.empty() ? "verified" : v.trust);
  o.key("trust_reason");
  o.str(v.trustReason);
  o.key("unreadable");
  o.strings(v.unreadable);
  o.key("up");
  o.boolean(v.up);
  o.key("version");
  o.str(s ? s->version : "");
  o.key("wanted_digest");
  v.wanted ? o.str(v.wanted->declarationDigest) : o.null();
  o.key("wanted_revision");
  v.wantedRevision ? o.num(v.wantedRevision) : o.null();
  o.key("wanted_serial");
  v.wanted ? o.num(v.wanted->serial) : o.null();
  o.out += '}';
}

}  // namespace

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

// From this many nodes on, they are judged on several threads, kChunk nodes at a time.
constexpr size_t kParallelFrom = 256;
constexpr size_t kChunk = 32;

namespace {

FleetView viewKnown(const std::map<std::string, NodeKeys>& known, int64_t revision,
                    const FleetKeys& keys, const std::vector<trust::OperatorPublicKey>& trusted,
                    int64_t nowMs, VerifiedMemo* memo) {
  FleetView out;
  out.cluster = keys.cluster;
  out.revision = revision;
  out.nowMs = nowMs;
  std::vector<const std::pair<const std::string, NodeKeys>*> order;
  order.reserve(known.size());
  for (const auto& entry : known) order.push_back(&entry);
  out.nodes.resize(order.size());
  std::vector<std::optional<PushedDeclaration>> pushed(order.size());
  const DecodedValues decoded = decodeDistinct(known);
  // Each node is judged on its own (a signature or two to check, a few JSON values to
  // read): across the machine's cores for a large fleet, in order for a small one. The
  // threads take the next chunk of nodes as they finish one, so a thread that gets less
  // of a busy machine's CPU does less of the work rather than holding up the others.
  std::atomic<size_t> next{0};
  const auto judge = [&] {
    for (;;) {
      const size_t from = next.fetch_add(kChunk, std::memory_order_relaxed);
      if (from >= order.size()) return;
      for (size_t i = from; i < std::min(from + kChunk, order.size()); ++i) {
        const auto& [node, k] = *order[i];
        NodeView v = viewOf(node, k, decoded, pushed[i]);
        checkTrust(v, keys.cluster, k, trusted, nowMs, memo);
        v.state = stateOf(v);
        if (v.state != NodeState::Converged) {
          v.reasons = reasonsOf(v, nowMs);
          v.lastError = lastErrorOf(v);
        }
        out.nodes[i] = std::move(v);
      }
    }
  };
  const size_t threads = order.size() < kParallelFrom
                             ? 1
                             : std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
  // What a judging thread throws is the view's to throw, after every thread ended.
  std::mutex failedMutex;
  std::exception_ptr failed;
  const auto judgeGuarded = [&] {
    try {
      judge();
    } catch (...) {
      std::lock_guard lock(failedMutex);
      if (!failed) failed = std::current_exception();
      next = order.size();
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(judgeGuarded);
  judgeGuarded();
  for (auto& th : pool) th.join();
  if (failed) std::rethrow_exception(failed);
  PushedBy pushedBy(trusted);
  for (size_t i = 0; i < order.size(); ++i)
    if (pushed[i] && out.nodes[i].wanted)
      pushedBy.note(*pushed[i], *out.nodes[i].wanted, order[i]->second.declaration->key);
  out.versions = versionsOf(out.nodes, pushedBy);
  return out;
}

}  // namespace

FleetView viewFleet(const EtcdRange& range, const FleetKeys& keys,
                    const std::vector<trust::OperatorPublicKey>& trusted, int64_t nowMs,
                    VerifiedMemo* memo) {
  return viewKnown(nodesIn(range, keys), range.revision, keys, trusted, nowMs, memo);
}

FleetView viewFleet(EtcdRange&& range, const FleetKeys& keys,
                    const std::vector<trust::OperatorPublicKey>& trusted, int64_t nowMs,
                    VerifiedMemo* memo) {
  const int64_t revision = range.revision;
  return viewKnown(nodesIn(std::move(range), keys), revision, keys, trusted, nowMs, memo);
}


json fleetJson(const FleetView& v) {
  json nodes = json::array();
  for (const auto& n : v.nodes) nodes.push_back(nodeJson(n));
  json summary = {{"nodes", v.nodes.size()}};
  for (auto s : {NodeState::Converged, NodeState::Down, NodeState::Behind, NodeState::Refused,
                 NodeState::Failing, NodeState::Churning, NodeState::Unenrolled, NodeState::Forged})
    summary[stateName(s)] = v.count(s);
  json versions = json::array();
  for (const auto& ver : v.versions)
    versions.push_back(
        {{"digest", ver.digest.empty() ? json(nullptr) : json(ver.digest)},
         {"serial", optionalInt(ver.serial)},
         {"nodes", ver.nodes},
         {"pushed_by", ver.pushedBy.empty() ? json(nullptr) : json(ver.pushedBy)},
         {"pushed_at", ver.pushedAtMs ? json(isoTime(ver.pushedAtMs)) : json(nullptr)},
         {"pushed_verified", ver.pushedVerified}});
  return {{"schema", kJsonSchema},         {"cluster", v.cluster},
          {"revision", v.revision},        {"nodes", std::move(nodes)},
          {"summary", std::move(summary)}, {"versions", std::move(versions)}};
}

std::string fleetJsonText(const FleetView& v) {
  // The small parts as the tree has them; the nodes written straight in, between.
  json rest = fleetJson(FleetView{v.cluster, v.revision, v.nowMs, {}, v.versions});
  rest["summary"]["nodes"] = v.nodes.size();
  for (auto s : {NodeState::Converged, NodeState::Down, NodeState::Behind, NodeState::Refused,
                 NodeState::Failing, NodeState::Churning, NodeState::Unenrolled, NodeState::Forged})
    rest["summary"][stateName(s)] = v.count(s);
  JsonText o;
  o.out.reserve(v.nodes.size() * 700 + 4096);
  o.out += '{';
  o.key("cluster", true);
  o.out += jsonOut(rest["cluster"]);
  o.key("nodes");
  o.out += '[';
  for (size_t i = 0; i < v.nodes.size(); ++i) {
    if (i) o.out += ',';
    nodeText(o, v.nodes[i]);
  }
  o.out += ']';
  for (const char* k : {"revision", "schema", "summary", "versions"}) {
    o.key(k);
    o.out += jsonOut(rest[k]);
  }
  o.out += '}';
  return std::move(o.out);
}

std::string shortKey(const std::string& key) {
  const auto colon = key.find(':');
  const size_t keep = colon == std::string::npos ? 8 : colon + 1 + 8;
  return key.size() <= keep ? key : key.substr(0, keep) + "…";
}

}  // namespace mesh::fleet
