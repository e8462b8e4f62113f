// `mesh-host fleet status`: reads every node's keys in one range (one consistent revision)
// and says how far each node has converged. Keys and JSON: fleet/protocol.hh; states,
// behaviour and output: docs/fleet.md.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.hh"
#include "cli/fleet_common.hh"
#include "cli/time_text.hh"
#include "fleet/etcd.hh"
#include "fleet/protocol.hh"
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
  std::optional<fleet::PushedDeclaration> wanted;
  int64_t wantedRevision = 0;  // the declaration key's mod revision, 0 none
  // The live status, or for a down node the last one seen.
  std::optional<fleet::NodeStatus> status;
  std::vector<std::string> unreadable;  // keys that did not decode
  std::string state;
};

bool refusedWanted(const NodeView& v) {
  return v.status && v.status->refused && v.wantedRevision > 0 &&
         v.status->refused->revision >= v.wantedRevision;
}

// The precedence of docs/fleet.md: down, refused, failing, behind, churning, converged.
std::string stateOf(const NodeView& v) {
  if (!v.up) return "down";
  if (!v.status) return "failing";  // its status key does not decode
  if (refusedWanted(v)) return "refused";
  if (isFailing(*v.status)) return "failing";
  if (v.status->revision < v.wantedRevision) return "behind";
  if (!v.status->churning.empty()) return "churning";
  return "converged";
}

NodeView viewOf(const std::string& node, const NodeKeys& k) {
  NodeView v;
  v.node = node;
  v.up = k.status.has_value();
  if (k.declaration) {
    v.wantedRevision = k.declaration->modRevision;
    try {
      v.wanted = fleet::decodePushed(k.declaration->value, k.declaration->key);
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
  const auto* s = v.status ? &*v.status : nullptr;
  if (!v.up) {
    line(s ? fmt::format("down: no status since {} ({}); it had applied serial {} (revision {})",
                         isoTime(s->publishedAtMs), agoText(s->publishedAtMs, now),
                         serialText(s->serial), s->revision)
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
  if (s->revision < v.wantedRevision && !refusedWanted(v))  // a refusal says why already
    line(fmt::format("behind: applied revision {} (serial {}); revision {} (serial {}) is pushed",
                     s->revision, serialText(s->serial), v.wantedRevision,
                     serialText(v.wanted ? v.wanted->serial : std::nullopt)));
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
                 {"at_ms", s->refused->atMs}};
  }
  return {{"node", v.node},
          {"state", v.state},
          {"up", v.up},
          {"wanted_serial", optionalInt(v.wanted ? v.wanted->serial : std::nullopt)},
          {"wanted_revision", v.wantedRevision ? json(v.wantedRevision) : json(nullptr)},
          {"applied_serial", optionalInt(s ? s->serial : std::nullopt)},
          {"applied_revision", s ? json(s->revision) : json(nullptr)},
          {"failed", s ? s->failed : 0},
          {"failing", std::move(failing)},
          {"churning", s ? json(s->churning) : json::array()},
          {"refused", std::move(refused)},
          {"cycle_error", s ? s->cycleError : ""},
          {"last_seen_ms", s && s->publishedAtMs ? json(s->publishedAtMs) : json(nullptr)},
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

}  // namespace

int runFleetStatus(const FleetOptions& f) {
  const auto keys = keysOf(f);
  fleet::EtcdClient client(endpointOf(f));
  const auto range = client.getPrefix(keys.nodesPrefix());
  const int64_t now = nowMs();
  std::vector<NodeView> views;
  std::map<std::string, int> counts;
  for (const auto& [node, k] : nodesIn(range, keys)) {
    views.push_back(viewOf(node, k));
    ++counts[views.back().state];
  }
  const size_t converged = counts["converged"];

  if (f.json) {
    json nodes = json::array();
    for (const auto& v : views) nodes.push_back(viewJson(v));
    json summary = {{"nodes", views.size()}};
    for (const char* state : {"converged", "down", "behind", "refused", "failing", "churning"})
      summary[state] = counts[state];
    json out = {{"cluster", f.cluster},
                {"revision", range.revision},
                {"nodes", std::move(nodes)},
                {"summary", std::move(summary)}};
    std::puts(out.dump().c_str());
  } else if (views.empty()) {
    std::puts(fmt::format("cluster {}: no nodes (nothing under {} at revision {})", f.cluster,
                          keys.nodesPrefix(), range.revision)
                  .c_str());
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"NODE", "WANTED", "APPLIED", "STATE", "FAILED", "CHURNING", "LAST SEEN"}};
    std::vector<std::string> details;
    for (const auto& v : views) {
      const auto* s = v.status ? &*v.status : nullptr;
      rows.push_back(
          {v.node, serialText(v.wanted ? v.wanted->serial : std::nullopt),
           serialText(s ? s->serial : std::nullopt), v.state, s ? std::to_string(s->failed) : "-",
           s ? std::to_string(s->churning.size()) : "-", agoText(s ? s->publishedAtMs : 0, now)});
      if (v.state != "converged")
        for (auto& d : detailsOf(v, now)) details.push_back(std::move(d));
    }
    printTable(rows);
    if (!details.empty()) std::puts("");
    for (const auto& d : details) std::puts(d.c_str());
    std::string tally;
    for (const char* state : {"down", "behind", "refused", "failing", "churning"})
      if (counts[state]) tally += fmt::format(", {} {}", counts[state], state);
    std::puts("");
    std::puts(fmt::format("cluster {} at revision {}: {} node(s), {} converged{}", f.cluster,
                          range.revision, views.size(), converged, tally)
                  .c_str());
  }
  return converged == views.size() ? kExitOk : kExitFailed;
}

}  // namespace mesh::cli
