#include "fleet/protocol.hh"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "fleet/json_value.hh"
#include "util/error.hh"
#include "util/text_safe.hh"

namespace mesh::fleet {

using json = nlohmann::json;

void checkFleetName(const std::string& name, const std::string& what) {
  const bool ok = !name.empty() && name.size() <= 128 && name != "." && name != ".." &&
                  name.find_first_not_of(
                      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@-") ==
                      std::string::npos;
  if (!ok)
    throw InputError("{} \"{}\": a name is 1 to 128 of A-Z a-z 0-9 . _ @ - (not . or ..)", what,
                     name);
}

std::string FleetKeys::nodesPrefix() const {
  return "/mesh/" + cluster + "/nodes/";
}
std::string FleetKeys::declaration(const std::string& node) const {
  return nodesPrefix() + node + "/declaration";
}
std::string FleetKeys::status(const std::string& node) const {
  return nodesPrefix() + node + "/status";
}
std::string FleetKeys::seenPrefix() const {
  return "/mesh/" + cluster + "/seen/";
}
std::string FleetKeys::seen(const std::string& node) const {
  return seenPrefix() + node;
}
std::string FleetKeys::legacySeen(const std::string& node) const {
  return nodesPrefix() + node + "/seen";
}
std::string FleetKeys::restartSlots(const std::string& service) const {
  return "/mesh/" + cluster + "/restarts/" + service + "/";
}
std::string FleetKeys::pushLock() const {
  return "/mesh/" + cluster + "/push-lock";
}
std::string FleetKeys::bodiesPrefix() const {
  return "/mesh/" + cluster + "/declarations/";
}
std::string FleetKeys::body(const std::string& digest) const {
  constexpr std::string_view kAlgorithm = "sha256:";
  return bodiesPrefix() +
         (digest.starts_with(kAlgorithm) ? digest.substr(kAlgorithm.size()) : digest);
}

std::string FleetKeys::bodyChunk(const std::string& digest, int64_t index) const {
  return body(digest) + fmt::format("/{:06}", index);
}
std::string FleetKeys::pushesPrefix() const {
  return "/mesh/" + cluster + "/pushes/";
}
std::string FleetKeys::push(int64_t pushedAtMs, const std::string& digest) const {
  const std::string hex = body(digest).substr(bodiesPrefix().size());
  return pushesPrefix() + fmt::format("{:016}-{}", pushedAtMs, hex.substr(0, 12));
}

namespace {

// splitNodeKey's reading, as views into `key` under `prefix` (keys.nodesPrefix()): tens of
// thousands of keys are split per range without building two strings for each.
std::optional<std::pair<std::string_view, std::string_view>> splitUnder(std::string_view prefix,
                                                                        std::string_view key) {
  if (!key.starts_with(prefix)) return std::nullopt;
  key.remove_prefix(prefix.size());
  const auto slash = key.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == key.size()) return std::nullopt;
  const auto rest = key.substr(slash + 1);
  if (rest.find('/') != std::string_view::npos) return std::nullopt;
  return std::pair{key.substr(0, slash), rest};
}

// nodesIn, the values copied out of `range` (const) or moved (not const).
template <typename Range>
std::map<std::string, NodeKeys> nodesOf(Range& range, const FleetKeys& keys) {
  std::map<std::string, NodeKeys> nodes;
  const std::string seenPrefix = keys.seenPrefix(), nodesPrefix = keys.nodesPrefix();
  // Of a node's two seen copies (an older agent's under its node prefix), the newer.
  const auto seen = [](std::optional<EtcdKeyValue>& slot, auto& kv) {
    if (!slot || slot->modRevision < kv.modRevision) slot = std::move(kv);
  };
  std::pair<const std::string, NodeKeys>* last = nullptr;
  for (auto& kv : range.kvs) {
    if (kv.key.starts_with(seenPrefix)) {
      const std::string node = kv.key.substr(seenPrefix.size());
      if (!node.empty() && node.find('/') == std::string::npos) seen(nodes[node].seen, kv);
      continue;
    }
    const auto split = splitUnder(nodesPrefix, kv.key);
    if (!split) continue;
    const auto [nodeView, what] = *split;
    const bool known = what == "declaration" || what == "status" || what == "seen" ||
                       what == "enrollment" || what == "heartbeat";
    if (!known) continue;
    // A node's keys come together in a range: its entry is found once, not per key.
    if (!last || last->first != nodeView)
      last = &*nodes.try_emplace(nodes.end(), std::string(nodeView));
    auto& k = last->second;
    if (what == "declaration") k.declaration = std::move(kv);
    if (what == "status") k.status = std::move(kv);
    if (what == "seen") seen(k.seen, kv);
    if (what == "enrollment") k.enrollment = std::move(kv);
    if (what == "heartbeat") k.heartbeat = std::move(kv);
  }
  return nodes;
}

}  // namespace

std::map<std::string, NodeKeys> nodesIn(const EtcdRange& range, const FleetKeys& keys) {
  return nodesOf(range, keys);
}

std::map<std::string, NodeKeys> nodesIn(EtcdRange&& range, const FleetKeys& keys) {
  return nodesOf(range, keys);
}

EtcdRange readFleet(EtcdClient& etcd, const FleetKeys& keys, const EtcdClient::KvObserver& onKv) {
  EtcdRange range = etcd.getPrefix(keys.nodesPrefix(), onKv);
  // Whether a known node (nodesIn) has no live status, by the keys alone: the values
  // (tens of MB at 10,000 nodes) are not copied for that.
  const std::string prefix = keys.nodesPrefix();
  std::unordered_map<std::string_view, bool> hasStatus;  // views into range.kvs' keys
  for (const auto& kv : range.kvs)
    if (const auto split = splitUnder(prefix, kv.key)) {
      const auto& what = split->second;
      if (what == "declaration" || what == "status" || what == "seen" || what == "enrollment" ||
          what == "heartbeat")
        hasStatus[split->first] |= what == "status";
    }
  const bool someDown = std::any_of(hasStatus.begin(), hasStatus.end(),
                                    [](const auto& entry) { return !entry.second; });
  if (someDown)
    for (auto& kv : etcd.getPrefix(keys.seenPrefix()).kvs) range.kvs.push_back(std::move(kv));
  return range;
}

std::optional<std::pair<std::string, std::string>> FleetKeys::splitNodeKey(
    std::string_view key) const {
  const auto split = splitUnder(nodesPrefix(), key);
  if (!split) return std::nullopt;
  return std::pair{std::string(split->first), std::string(split->second)};
}

namespace {

json parseObject(std::string_view text, const std::string& where, const char* what) {
  json j = parseEtcdJson(text);
  if (!j.is_object()) throw InputError("{}: not {} (expected a JSON object)", where, what);
  return j;
}

template <typename T>
T field(const json& j, const char* name, T fallback, const std::string& where) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw InputError("{}: field \"{}\" has the wrong type", where, name);
  }
}

std::optional<int64_t> optionalInt(const json& j, const char* name, const std::string& where) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) throw InputError("{}: field \"{}\" is not an integer", where, name);
  return it->get<int64_t>();
}

// A field that must be an object when present ({} when absent).
json objectField(const json& j, const char* name, const std::string& where) {
  json v = field<json>(j, name, json::object(), where);
  if (!v.is_object()) throw InputError("{}: field \"{}\" is not an object", where, name);
  return v;
}

// A field that must be an array of objects when present ([] when absent).
json objectArrayField(const json& j, const char* name, const std::string& where) {
  json v = field<json>(j, name, json::array(), where);
  if (!v.is_array() ||
      !std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_object(); }))
    throw InputError("{}: field \"{}\" is not an array of objects", where, name);
  return v;
}

json optionalJson(const std::optional<int64_t>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

namespace {

// Convergence by content: the cycle that applied the declaration in force.
// The counts a status and its applied cycle both carry (created … failed), as JSON
// and back.
template <typename Counts>
json countsJson(const Counts& c) {
  return {{"created", c.created}, {"updated", c.updated},   {"unchanged", c.unchanged},
          {"removed", c.removed}, {"released", c.released}, {"skipped", c.skipped},
          {"failed", c.failed}};
}

template <typename Counts>
void readCounts(Counts& c, const json& summary, const std::string& where) {
  for (auto [name, member] :
       {std::pair{"created", &Counts::created}, std::pair{"updated", &Counts::updated},
        std::pair{"unchanged", &Counts::unchanged}, std::pair{"removed", &Counts::removed},
        std::pair{"released", &Counts::released}, std::pair{"skipped", &Counts::skipped},
        std::pair{"failed", &Counts::failed}})
    c.*member = field<int64_t>(summary, name, 0, where);
}

json appliedCycleJson(const std::optional<NodeStatus::AppliedCycle>& a) {
  if (!a) return nullptr;
  return {{"cycle", a->cycle}, {"at_ms", a->atMs}, {"summary", countsJson(*a)}};
}

std::optional<NodeStatus::AppliedCycle> appliedCycleOf(const json& j, const std::string& where) {
  if (!j.contains("applied_cycle") || j["applied_cycle"].is_null()) return std::nullopt;
  const json a = objectField(j, "applied_cycle", where);
  const json summary = objectField(a, "summary", where);
  NodeStatus::AppliedCycle out;
  out.cycle = field<int64_t>(a, "cycle", 0, where);
  out.atMs = field<int64_t>(a, "at_ms", 0, where);
  readCounts(out, summary, where);
  return out;
}

json servicesJson(const std::vector<NodeStatus::Service>& services) {
  json out = json::array();
  for (const auto& v : services)
    out.push_back({{"id", v.id},
                   {"unit", v.unit},
                   {"running", v.running},
                   {"up_since_ms", v.upSinceMs},
                   {"restarts_by_mesh_host", v.restartsByMeshHost},
                   {"restarts_by_crash", v.restartsByCrash},
                   {"health", v.health},
                   {"health_reason", v.healthReason}});
  return out;
}

std::vector<NodeStatus::Service> servicesOf(const json& j, const std::string& where) {
  std::vector<NodeStatus::Service> out;
  for (const auto& e : objectArrayField(j, "services", where))
    out.push_back({.id = field<std::string>(e, "id", "", where),
                   .unit = field<std::string>(e, "unit", "", where),
                   .running = field<bool>(e, "running", false, where),
                   .upSinceMs = field<int64_t>(e, "up_since_ms", 0, where),
                   .restartsByMeshHost = field<int64_t>(e, "restarts_by_mesh_host", 0, where),
                   .restartsByCrash = field<int64_t>(e, "restarts_by_crash", 0, where),
                   .health = field<std::string>(e, "health", "", where),
                   .healthReason = field<std::string>(e, "health_reason", "", where)});
  return out;
}

}  // namespace

NodeStatus::AppliedCycle appliedCycleOf(const NodeStatus& s) {
  return {.cycle = s.cycle,
          .atMs = s.lastCycleAtMs,
          .created = s.created,
          .updated = s.updated,
          .unchanged = s.unchanged,
          .removed = s.removed,
          .released = s.released,
          .skipped = s.skipped,
          .failed = s.failed};
}

bool isFailing(const NodeStatus& s) {
  return s.failed > 0 || s.skipped > 0 || !s.failing.empty() || !s.cycleError.empty();
}

std::string encodeStatus(const NodeStatus& s) {
  json failing = json::array();
  for (const auto& [id, reason] : s.failing) failing.push_back({{"id", id}, {"reason", reason}});
  json refused = nullptr;
  if (s.refused)
    refused = {{"revision", s.refused->revision},
               {"serial", optionalJson(s.refused->serial)},
               {"reason", s.refused->reason},
               {"at_ms", s.refused->atMs},
               {"value_digest", s.refused->valueDigest},
               {"declaration_digest", s.refused->declarationDigest}};
  json paused = nullptr;
  if (s.paused)
    paused = {{"reason", s.paused->reason},
              {"user", s.paused->user},
              {"uid", s.paused->uid},
              {"since_ms", s.paused->sinceMs}};
  return jsonData(json{{"node", s.node},
                       {"cluster", s.cluster},
                       {"version", s.version},
                       {"pid", s.pid},
                       {"published_at_ms", s.publishedAtMs},
                       {"interval_ms", s.intervalMs},
                       {"generation", s.generation},
                       {"serial", optionalJson(s.serial)},
                       {"declaration_digest", s.declarationDigest},
                       {"revision", s.revision},
                       {"cycle", s.cycle},
                       {"last_cycle_at_ms", s.lastCycleAtMs},
                       {"cycle_ms", s.cycleMs},
                       {"trigger", s.trigger},
                       {"summary", countsJson(s)},
                       {"failing", failing},
                       {"churning", s.churning},
                       {"cycle_error", s.cycleError},
                       {"paused", paused},
                       {"noop", s.noop},
                       {"pending", s.pending},
                       {"refused", refused},
                       {"applied_cycle", appliedCycleJson(s.appliedCycle)},
                       {"services", servicesJson(s.services)},
                       {"etcd_cluster_id", s.etcdClusterId},
                       {"lease", s.lease}});
}

bool sameMaterially(const NodeStatus& a, const NodeStatus& b) {
  const auto material = [](NodeStatus s) {
    s.cycle = 0;
    s.lastCycleAtMs = 0;
    s.cycleMs = 0;
    s.trigger.clear();
    s.publishedAtMs = 0;
    return s;
  };
  return material(a) == material(b);
}

NodeStatus decodeStatus(std::string_view text, const std::string& where) {
  const json j = parseObject(text, where, "a node status");
  NodeStatus s;
  s.node = field<std::string>(j, "node", "", where);
  if (s.node.empty()) throw InputError("{}: not a node status (no \"node\")", where);
  s.cluster = field<std::string>(j, "cluster", "", where);
  s.version = field<std::string>(j, "version", "", where);
  s.pid = field<int64_t>(j, "pid", 0, where);
  s.publishedAtMs = field<int64_t>(j, "published_at_ms", 0, where);
  s.intervalMs = field<int64_t>(j, "interval_ms", 0, where);
  s.generation = field<int64_t>(j, "generation", 0, where);
  s.serial = optionalInt(j, "serial", where);
  s.declarationDigest = field<std::string>(j, "declaration_digest", "", where);
  s.revision = field<int64_t>(j, "revision", 0, where);
  s.cycle = field<int64_t>(j, "cycle", 0, where);
  s.lastCycleAtMs = field<int64_t>(j, "last_cycle_at_ms", 0, where);
  s.cycleMs = field<int64_t>(j, "cycle_ms", 0, where);
  s.trigger = field<std::string>(j, "trigger", "", where);
  const json summary = objectField(j, "summary", where);
  readCounts(s, summary, where);
  for (const auto& f : objectArrayField(j, "failing", where))
    s.failing.emplace_back(field<std::string>(f, "id", "", where),
                           field<std::string>(f, "reason", "", where));
  s.churning = field<std::vector<std::string>>(j, "churning", {}, where);
  s.cycleError = field<std::string>(j, "cycle_error", "", where);
  if (j.contains("paused") && !j["paused"].is_null()) {
    const json paused = objectField(j, "paused", where);
    NodeStatus::Pause p;
    p.reason = field<std::string>(paused, "reason", "", where);
    p.user = field<std::string>(paused, "user", "", where);
    p.uid = field<int64_t>(paused, "uid", 0, where);
    p.sinceMs = field<int64_t>(paused, "since_ms", 0, where);
    s.paused = p;
  }
  s.noop = field<bool>(j, "noop", false, where);
  s.pending = field<int64_t>(j, "pending", 0, where);
  if (j.contains("refused") && !j["refused"].is_null()) {
    const json refused = objectField(j, "refused", where);
    NodeStatus::Refusal r;
    r.revision = field<int64_t>(refused, "revision", 0, where);
    r.serial = optionalInt(refused, "serial", where);
    r.reason = field<std::string>(refused, "reason", "", where);
    r.atMs = field<int64_t>(refused, "at_ms", 0, where);
    r.valueDigest = field<std::string>(refused, "value_digest", "", where);
    r.declarationDigest = field<std::string>(refused, "declaration_digest", "", where);
    s.refused = r;
  }
  s.appliedCycle = appliedCycleOf(j, where);
  s.services = servicesOf(j, where);
  s.etcdClusterId = field<std::string>(j, "etcd_cluster_id", "", where);
  s.lease = field<int64_t>(j, "lease", 0, where);
  return s;
}

}  // namespace mesh::fleet
