#include "fleet/view/json.hh"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "util/json_schema.hh"
#include "util/text_safe.hh"
#include "util/time_text.hh"

namespace mesh::fleet {

using nlohmann::json;

namespace {

json optionalInt(const std::optional<int64_t>& v) {
  return v ? json(*v) : json(nullptr);
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
          {"paused", s && s->paused ? json{{"reason", s->paused->reason},
                                           {"user", s->paused->user},
                                           {"uid", s->paused->uid},
                                           {"since_ms", s->paused->sinceMs}}
                                    : json(nullptr)},
          {"noop", s ? s->noop : false},
          {"pending", s ? s->pending : 0},
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
  o.key("noop");
  o.out += s && s->noop ? "true" : "false";
  o.key("paused");
  if (s && s->paused) {
    o.out += '{';
    o.key("reason", true);
    o.str(s->paused->reason);
    o.key("since_ms");
    o.num(s->paused->sinceMs);
    o.key("uid");
    o.num(s->paused->uid);
    o.key("user");
    o.str(s->paused->user);
    o.out += '}';
  } else {
    o.null();
  }
  o.key("pending");
  o.num(s ? s->pending : 0);
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

json rolloutJson(const std::optional<RolloutRecord>& r) {
  if (!r) return nullptr;
  const auto& o = r->options;
  return {{"serial", r->serial},
          {"digest", r->digest},
          {"state", rolloutStateName(r->state)},
          {"wave", r->wave + 1},
          {"waves", r->waves.size()},
          {"reason", r->reason},
          {"canary", r->waves.front()},
          {"nodes", r->waves},
          {"pushed_by", r->pushedBy},
          {"started_at", isoTime(r->startedAtMs)},
          {"updated_at", isoTime(r->updatedAtMs)},
          {"driver", r->driver},
          {"options",
           {{"canary", o.canary},
            {"wave", o.wave},
            {"min_healthy_ms", o.minHealthyMs},
            {"healthy_deadline_ms", o.healthyDeadlineMs},
            {"auto_revert", o.autoRevert},
            {"max_parallel_restarts", o.maxParallelRestarts}}},
          {"revert_serial", r->revertSerial ? json(*r->revertSerial) : json(nullptr)}};
}

json fleetJson(const FleetView& v) {
  json nodes = json::array();
  for (const auto& n : v.nodes) nodes.push_back(nodeJson(n));
  json summary = {{"nodes", v.nodes.size()}};
  for (auto s : {NodeState::Converged, NodeState::Down, NodeState::Behind, NodeState::Refused,
                 NodeState::Failing, NodeState::Paused, NodeState::Churning, NodeState::Unenrolled,
                 NodeState::Forged})
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
  return {{"schema", kJsonSchema},
          {"cluster", v.cluster},
          {"revision", v.revision},
          {"nodes", std::move(nodes)},
          {"summary", std::move(summary)},
          {"versions", std::move(versions)},
          {"rollout", rolloutJson(v.rollout)}};
}

std::string fleetJsonText(const FleetView& v) {
  // The small parts as the tree has them; the nodes written straight in, between.
  json rest = fleetJson(FleetView{v.cluster, v.revision, v.nowMs, {}, v.versions, v.rollout});
  rest["summary"]["nodes"] = v.nodes.size();
  for (auto s : {NodeState::Converged, NodeState::Down, NodeState::Behind, NodeState::Refused,
                 NodeState::Failing, NodeState::Paused, NodeState::Churning, NodeState::Unenrolled,
                 NodeState::Forged})
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
  for (const char* k : {"revision", "rollout", "schema", "summary", "versions"}) {
    o.key(k);
    o.out += jsonOut(rest[k]);
  }
  o.out += '}';
  return std::move(o.out);
}

}  // namespace mesh::fleet
