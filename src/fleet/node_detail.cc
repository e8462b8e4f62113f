#include "fleet/node_detail.hh"

#include <fnmatch.h>

#include "fleet/enroll.hh"
#include "fleet/node_signed.hh"
#include "fleet/push_history.hh"
#include "fleet/report.hh"
#include "fleet/view.hh"
#include "fleet/view/json.hh"
#include "util/error.hh"
#include "util/json_schema.hh"

namespace mesh::fleet {

using nlohmann::json;

namespace {

json servicesJson(const std::vector<NodeStatus::Service>& services) {
  json out = json::array();
  for (const auto& s : services)
    out.push_back({{"id", s.id},
                   {"unit", s.unit},
                   {"running", s.running},
                   {"up_since_ms", s.upSinceMs ? json(s.upSinceMs) : json(nullptr)},
                   {"restarts_by_mesh_host", s.restartsByMeshHost},
                   {"restarts_by_crash", s.restartsByCrash},
                   {"health", s.health},
                   {"health_reason", s.healthReason}});
  return out;
}

// The report as the page reads it: its own JSON (encodeReport: what the node signed,
// already within its bound) and whether it verified.
json reportJson(const NodeReport& r) {
  json j = json::parse(encodeReport(r));
  j.erase("type");
  j["verified"] = true;
  j["problem"] = "";
  return j;
}

// The report, if the node put one and its enrolled key signed it; else why not.
json readReport(EtcdClient& etcd, const FleetKeys& keys, const std::string& node,
                const std::optional<EtcdKeyValue>& enrollment,
                const std::vector<trust::OperatorPublicKey>& trusted) {
  const std::string key = reportKey(keys, node);
  const auto value = etcd.get(key);
  if (!value) return nullptr;
  EtcdKeyValue kv;
  kv.key = key;
  kv.value = value->value;
  const auto t = checkNode(keys.cluster, node, enrollment, {kv}, trusted);
  if (t.verdict != NodeTrust::Verdict::Verified)
    return {{"verified", false}, {"problem", "the report is not trusted: " + t.reason}};
  try {
    return reportJson(decodeReport(value->value, key));
  } catch (const InputError& e) {
    return {{"verified", false}, {"problem", e.what()}};
  }
}

}  // namespace

bool selectorNames(const std::string& selectorText, const std::string& node) {
  size_t from = 0;
  while (from <= selectorText.size()) {
    size_t comma = selectorText.find(',', from);
    if (comma == std::string::npos) comma = selectorText.size();
    std::string item = selectorText.substr(from, comma - from);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty() && (item == node || ::fnmatch(item.c_str(), node.c_str(), 0) == 0))
      return true;
    from = comma + 1;
  }
  return false;
}

json nodeDetail(EtcdClient& etcd, const FleetKeys& keys, const std::string& node,
                const std::vector<trust::OperatorPublicKey>& trusted, int64_t nowMs) {
  checkFleetName(node, "node");
  EtcdRange range = etcd.getPrefix(nodePrefix(keys, node));
  std::optional<EtcdKeyValue> enrollment;
  for (const auto& kv : range.kvs)
    if (kv.key == enrollmentKey(keys, node)) enrollment = kv;
  if (const auto seen = etcd.get(keys.seen(node))) {
    EtcdKeyValue kv;
    kv.key = keys.seen(node);
    kv.value = seen->value;
    range.kvs.push_back(std::move(kv));
  }
  const FleetView view = viewFleet(range, keys, trusted, nowMs);
  const NodeView* v = nullptr;
  for (const auto& n : view.nodes)
    if (n.node == node) v = &n;
  json out = {{"schema", kJsonSchema},
              {"cluster", keys.cluster},
              {"node", node},
              {"revision", range.revision},
              {"known", v != nullptr}};
  if (v) {
    FleetView one{view.cluster, view.revision, view.nowMs, {*v}, {}, std::nullopt};
    out["view"] = fleetJson(one)["nodes"][0];
    const auto* s = v->status ? &*v->status : nullptr;
    out["services"] = s ? servicesJson(s->services) : json::array();
    out["applied_cycle"] = s && s->appliedCycle ? json{{"cycle", s->appliedCycle->cycle},
                                                       {"at_ms", s->appliedCycle->atMs}}
                                                : json(nullptr);
  } else {
    out["view"] = nullptr;
    out["services"] = json::array();
    out["applied_cycle"] = nullptr;
  }
  out["report"] = readReport(etcd, keys, node, enrollment, trusted);
  json pushes = json::array();
  for (const auto& e : readPushHistory(etcd, keys, 0, trusted)) {
    if (!e.record || !selectorNames(e.record->selector, node)) continue;
    const auto& r = *e.record;
    pushes.push_back({{"serial", r.serial},
                      {"digest", r.digest},
                      {"pushed_at_ms", r.pushedAtMs},
                      {"pushed_by", r.pushedBy},
                      {"verified", e.verified.value_or(false)},
                      {"selector", r.selector}});
  }
  out["pushes"] = std::move(pushes);
  return out;
}

}  // namespace mesh::fleet
