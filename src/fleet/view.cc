#include "fleet/view.hh"

#include <algorithm>
#include <optional>
#include <utility>

#include "fleet/view/judge.hh"
#include "fleet/view/parallel.hh"
#include "fleet/view/versions.hh"

namespace mesh::fleet {

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
  forEachNode(order.size(), [&](size_t i) {
    const auto& [node, k] = *order[i];
    out.nodes[i] = judgeNode(node, k, decoded, pushed[i], keys.cluster, trusted, nowMs, memo);
  });
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

std::string shortKey(const std::string& key) {
  const auto colon = key.find(':');
  const size_t keep = colon == std::string::npos ? 8 : colon + 1 + 8;
  return key.size() <= keep ? key : key.substr(0, keep) + "…";
}

}  // namespace mesh::fleet
