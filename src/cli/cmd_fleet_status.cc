// `mesh-host fleet status`: reads every node's keys in one range (one consistent revision)
// and says how far each node has converged. Keys and JSON: fleet/protocol.hh; states,
// behaviour and output: docs/fleet.md.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.hh"
#include "cli/fleet_common.hh"
#include "cli/time_text.hh"
#include "fleet/enroll.hh"
#include "fleet/etcd.hh"
#include "fleet/node_signed.hh"
#include "fleet/protocol.hh"
#include "fleet/statement.hh"
#include "util/error.hh"

namespace mesh::cli {

using nlohmann::json;

namespace {

json optionalInt(const std::optional<int64_t>& v) {
  return v ? json(*v) : json(nullptr);
}

// One node as `fleet status` sees it.
struct NodeView {
  std::string node;
  bool up = false;  // a status key exists (the node's lease is alive)
  // What is pushed to it, as its statement says (unverified: the node verifies).
  std::optional<fleet::Statement> wanted;
  int64_t wantedRevision = 0;  // the declaration key's mod revision, 0 none
  std::string wantedValue;     // valueDigest() of the declaration key's value, "" none
  // The live status, or for a down node the last one seen.
  std::optional<fleet::NodeStatus> status;
  std::vector<std::string> unreadable;  // keys that did not decode
  std::string state;
  // Enrollment (checkTrust): "" verified, else "unenrolled" or "forged" (why in
  // trustReason); when the node was seen alive, unix ms — now while its lease holds (0
  // none); why a node whose status key exists is down all the same.
  std::string trust;
  std::string trustReason;
  int64_t heartbeatMs = 0;
  std::string downReason;
};

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

// The precedence of docs/fleet.md: down, refused, failing, behind, churning, converged.
std::string stateOf(const NodeView& v) {
  if (!v.trust.empty()) return v.trust;  // nothing it says can be believed
  if (!v.up) return "down";
  if (!v.status) return "failing";  // its status key does not decode
  if (refusedWanted(v)) return "refused";
  if (isFailing(*v.status)) return "failing";
  if (behindWanted(v)) return "behind";
  if (!v.status->churning.empty()) return "churning";
  return "converged";
}

NodeView viewOf(const std::string& node, const NodeKeys& k) {
  NodeView v;
  v.node = node;
  v.up = k.status.has_value();
  if (k.declaration) {
    v.wantedRevision = k.declaration->modRevision;
    v.wantedValue = fleet::valueDigest(k.declaration->value);
    try {
      v.wanted = fleet::peekStatement(fleet::decodePushed(k.declaration->value, k.declaration->key),
                                      k.declaration->key);
    } catch (const InputError& e) {
      v.unreadable.push_back(e.what());
    }
  }
  if (const auto& kv = k.status ? k.status : k.seen) {
    try {
      v.status = fleet::decodeStatus(kv->value, kv->key);
    } catch (const InputError& e) {
      v.unreadable.push_back(e.what());
    }
  }
  v.state = stateOf(v);
  return v;
}

std::string agoText(int64_t ms, int64_t now);

// What the node signed, checked against its enrollment: a forged or unenrolled node shows
// nothing from its statuses. Liveness is the lease (an idle node writes nothing): a node
// is up while its status and its signed heartbeat sit on one live lease that both name —
// a status or heartbeat put back on another lease is not alive. (A heartbeat naming no
// lease is an older agent's, put every few seconds: it counts while it is fresh.)
void checkTrust(NodeView& v, const std::string& cluster, const NodeKeys& k,
                const std::vector<trust::OperatorPublicKey>& trusted, int64_t now) {
  std::vector<fleet::EtcdKeyValue> signedKeys;
  for (const auto* kv : {&k.status, &k.seen, &k.heartbeat})
    if (*kv) signedKeys.push_back(**kv);
  const auto t = fleet::checkNode(cluster, v.node, k.enrollment, signedKeys, trusted);
  std::optional<fleet::Heartbeat> beat;
  if (t.verdict != fleet::NodeTrust::Verdict::Verified) {
    v.trust = t.verdict == fleet::NodeTrust::Verdict::Forged ? "forged" : "unenrolled";
    v.trustReason = t.reason;
    v.status.reset();
    v.up = false;
  } else if (k.heartbeat) {
    try {
      beat = fleet::decodeHeartbeat(k.heartbeat->value, k.heartbeat->key);
    } catch (const InputError& e) {
      v.unreadable.push_back(e.what());
    }
  }
  if (v.up) {
    const int64_t lease = k.status->lease;
    const int64_t staleMs = std::chrono::milliseconds(fleet::kHeartbeatStale).count();
    if (!beat)
      v.downReason = "its status is on a live lease but it has no heartbeat";
    else if (beat->lease == 0 && now - beat->atMs > staleMs)
      v.downReason = fmt::format(
          "its status is on a live lease but its newest heartbeat is from {} "
          "({}), older than {} s",
          isoTime(beat->atMs), agoText(beat->atMs, now), fleet::kHeartbeatStale.count());
    else if (beat->lease != 0 && beat->lease != k.heartbeat->lease)
      v.downReason = fmt::format(
          "its heartbeat names lease {:x} but sits on lease {:x}: put back from an earlier lease",
          beat->lease, k.heartbeat->lease);
    else if (beat->lease != 0 && beat->lease != lease)
      v.downReason = fmt::format(
          "its status sits on lease {:x}, not on the lease of its heartbeat ({:x}): put back "
          "from an earlier lease",
          lease, beat->lease);
    else if (v.status && v.status->lease != 0 && v.status->lease != lease)
      v.downReason = fmt::format(
          "its status names lease {:x} but sits on lease {:x}: put back from an earlier lease",
          v.status->lease, lease);
    if (!v.downReason.empty())
      v.up = false;
    else
      v.heartbeatMs = beat->lease != 0 ? now : beat->atMs;  // its lease holds: seen now
  }
  v.state = stateOf(v);
}

// LAST SEEN: now for a node that is up, else when its status was last put (a node that
// idles writes nothing, so a down node died some time after that).
int64_t lastSeenMs(const NodeView& v) {
  if (v.heartbeatMs) return v.heartbeatMs;
  return v.status ? v.status->publishedAtMs : 0;
}

std::string digestText(const std::string& digest) {
  return digest.empty() ? "-" : fleet::shortDigest(digest);
}

std::optional<int64_t> wantedSerial(const NodeView& v) {
  return v.wanted ? std::optional<int64_t>(v.wanted->serial) : std::nullopt;
}

std::string agoText(int64_t ms, int64_t now) {
  if (ms <= 0) return "never";
  const int64_t s = std::max<int64_t>(0, (now - ms) / 1000);
  if (s < 120) return fmt::format("{}s ago", s);
  if (s < 2 * 3600) return fmt::format("{}m ago", s / 60);
  if (s < 2 * 86400) return fmt::format("{}h ago", s / 3600);
  return fmt::format("{}d ago", s / 86400);
}

// Why a node is not converged, one line per reason.
std::vector<std::string> detailsOf(const NodeView& v, int64_t now) {
  std::vector<std::string> out;
  const auto line = [&](const std::string& text) { out.push_back(v.node + ": " + text); };
  for (const auto& u : v.unreadable) line("unreadable: " + u);
  if (!v.trust.empty()) {
    line(v.trust + ": " + v.trustReason);
    return out;
  }
  if (!v.downReason.empty()) line("down: " + v.downReason);
  const auto* s = v.status ? &*v.status : nullptr;
  if (!v.up) {
    line(s ? fmt::format("down: no status since {} ({}); it had applied serial {} ({})",
                         isoTime(s->publishedAtMs), agoText(s->publishedAtMs, now),
                         serialText(s->serial), digestText(s->declarationDigest))
           : "down: never seen (no status or seen key)");
    return out;
  }
  if (!s) return out;
  if (refusedWanted(v))
    line(fmt::format("refused serial {} (revision {}) at {}: {}", serialText(s->refused->serial),
                     s->refused->revision, isoTime(s->refused->atMs), s->refused->reason));
  for (const auto& [id, reason] : s->failing) line(fmt::format("failed {}: {}", id, reason));
  if (s->failing.empty() && s->failed > 0)
    line(fmt::format("{} resource(s) failed in cycle {}", s->failed, s->cycle));
  if (!s->cycleError.empty()) line("cycle error: " + s->cycleError);
  if (behindWanted(v) && !refusedWanted(v))  // a refusal says why already
    line(fmt::format("behind: applied serial {} ({}); serial {} ({}) is pushed (revision {})",
                     serialText(s->serial), digestText(s->declarationDigest),
                     v.wanted ? std::to_string(v.wanted->serial) : "-",
                     v.wanted ? digestText(v.wanted->declarationDigest) : "unreadable",
                     v.wantedRevision));
  if (!s->churning.empty()) line(fmt::format("churning: {}", fmt::join(s->churning, ", ")));
  return out;
}

json viewJson(const NodeView& v) {
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
  return {{"node", v.node},
          {"state", v.state},
          {"up", v.up},
          {"trust", v.trust.empty() ? "verified" : v.trust},
          {"trust_reason", v.trustReason},
          {"wanted_serial", optionalInt(wantedSerial(v))},
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
          {"last_seen_ms", lastSeenMs(v) ? json(lastSeenMs(v)) : json(nullptr)},
          {"version", s ? s->version : ""},
          {"cycle", s ? s->cycle : 0},
          {"summary",
           {{"created", s ? s->created : 0},
            {"updated", s ? s->updated : 0},
            {"unchanged", s ? s->unchanged : 0},
            {"removed", s ? s->removed : 0},
            {"failed", s ? s->failed : 0}}},
          {"unreadable", v.unreadable}};
}

// The table: columns padded to their widest cell.
void printTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      widths.resize(std::max(widths.size(), row.size()));
      widths[i] = std::max(widths[i], row[i].size());
    }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i)
      line += i + 1 == row.size() ? row[i] : fmt::format("{:<{}}  ", row[i], widths[i]);
    std::puts(line.c_str());
  }
}

// The per-version summary: how many nodes apply each declaration (digest and serial),
// from their live or last seen status, most nodes first.
struct Version {
  std::string digest;  // "" nothing applied (or never seen)
  std::optional<int64_t> serial;
  std::vector<std::string> nodes;
};

std::vector<Version> versionsOf(const std::vector<NodeView>& views) {
  std::map<std::pair<std::string, std::optional<int64_t>>, std::vector<std::string>> by;
  for (const auto& v : views) {
    const auto* s = v.status ? &*v.status : nullptr;
    by[{s ? s->declarationDigest : "", s ? s->serial : std::nullopt}].push_back(v.node);
  }
  std::vector<Version> out;
  for (auto& [k, nodes] : by) out.push_back({k.first, k.second, std::move(nodes)});
  std::stable_sort(out.begin(), out.end(), [](const Version& a, const Version& b) {
    return a.nodes.size() > b.nodes.size();
  });
  return out;
}

std::string versionsLine(const std::vector<Version>& versions) {
  std::vector<std::string> parts;
  for (const auto& v : versions)
    parts.push_back(v.digest.empty()
                        ? fmt::format("{} node(s) with nothing applied", v.nodes.size())
                        : fmt::format("{} node(s) on serial {} ({})", v.nodes.size(),
                                      serialText(v.serial), fleet::shortDigest(v.digest)));
  return fmt::format("versions: {}", fmt::join(parts, ", "));
}

json versionsJson(const std::vector<Version>& versions) {
  json out = json::array();
  for (const auto& v : versions)
    out.push_back({{"digest", v.digest.empty() ? json(nullptr) : json(v.digest)},
                   {"serial", optionalInt(v.serial)},
                   {"nodes", v.nodes}});
  return out;
}

}  // namespace

int runFleetStatus(const FleetOptions& f) {
  const auto keys = keysOf(f);
  const auto trusted = f.trust.load();
  fleet::EtcdClient client(etcdConfigOf(f));
  const auto range = client.getPrefix(keys.nodesPrefix());
  const int64_t now = nowMs();
  std::vector<NodeView> views;
  std::map<std::string, int> counts;
  for (const auto& [node, k] : nodesIn(range, keys)) {
    views.push_back(viewOf(node, k));
    checkTrust(views.back(), f.cluster, k, trusted, now);
    ++counts[views.back().state];
  }
  const size_t converged = counts["converged"];

  if (f.json) {
    json nodes = json::array();
    for (const auto& v : views) nodes.push_back(viewJson(v));
    json summary = {{"nodes", views.size()}};
    for (const char* state :
         {"converged", "down", "behind", "refused", "failing", "churning", "unenrolled", "forged"})
      summary[state] = counts[state];
    json out = {{"cluster", f.cluster},
                {"revision", range.revision},
                {"nodes", std::move(nodes)},
                {"summary", std::move(summary)},
                {"versions", versionsJson(versionsOf(views))}};
    std::puts(out.dump().c_str());
  } else if (views.empty()) {
    std::puts(fmt::format("cluster {}: no nodes (nothing under {} at revision {})", f.cluster,
                          keys.nodesPrefix(), range.revision)
                  .c_str());
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"NODE", "WANTED", "APPLIED", "DIGEST", "STATE", "FAILED", "CHURNING", "LAST SEEN"}};
    std::vector<std::string> details;
    for (const auto& v : views) {
      const auto* s = v.status ? &*v.status : nullptr;
      rows.push_back({v.node, serialText(wantedSerial(v)), serialText(s ? s->serial : std::nullopt),
                      digestText(s ? s->declarationDigest : ""), v.state,
                      s ? std::to_string(s->failed) : "-",
                      s ? std::to_string(s->churning.size()) : "-", agoText(lastSeenMs(v), now)});
      if (v.state != "converged")
        for (auto& d : detailsOf(v, now)) details.push_back(std::move(d));
    }
    printTable(rows);
    if (!details.empty()) std::puts("");
    for (const auto& d : details) std::puts(d.c_str());
    std::string tally;
    for (const char* state :
         {"forged", "unenrolled", "down", "behind", "refused", "failing", "churning"})
      if (counts[state]) tally += fmt::format(", {} {}", counts[state], state);
    std::puts("");
    std::puts(versionsLine(versionsOf(views)).c_str());
    std::puts(fmt::format("cluster {} at revision {}: {} node(s), {} converged{}", f.cluster,
                          range.revision, views.size(), converged, tally)
                  .c_str());
  }
  return converged == views.size() ? kExitOk : kExitFailed;
}

}  // namespace mesh::cli
