// `mesh-host fleet enroll NODE KEY`: records, signed by an operator key, which public key a
// node signs its statuses with; `mesh-host fleet forget NODE...`: removes every key of a
// node that is gone (decommissioned, or a typo). Keys: fleet/enroll.hh; docs/fleet.md.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.hh"
#include "cli/fleet_common.hh"
#include "cli/output.hh"
#include "fleet/enroll.hh"
#include "fleet/etcd.hh"
#include "fleet/json_value.hh"
#include "fleet/node_signed.hh"
#include "fleet/protocol.hh"
#include "trust/node_key.hh"
#include "trust/operator_key.hh"
#include "util/clock.hh"
#include "util/error.hh"
#include "util/text_safe.hh"

namespace mesh::cli {

using nlohmann::json;

void FleetEnrollOptions::addTo(CLI::App& cmd) {
  cmd.add_option("NODE", node, "the node's name (its --node)")->required();
  cmd.add_option("KEY", publicKey,
                 "the node's public key, mesh-node:… as mesh-host key show prints it on that node "
                 "(and its agent logs at start)")
      ->required();
  cmd.add_option("--key", key, "the operator key file that signs the record")
      ->option_text("FILE")
      ->required();
}

void FleetForgetOptions::addTo(CLI::App& cmd) {
  cmd.add_option("NODE", nodes, "the nodes to forget (exact names)")->required();
  cmd.add_flag("--force", force,
               "also a node that is up (its agent publishes again at its next cycle: stop it "
               "first)");
}

int runFleetEnroll(const FleetOptions& f, const FleetEnrollOptions& e) {
  const auto keys = keysOf(f);
  fleet::checkFleetName(e.node, "NODE");
  const auto publicKey = trust::NodePublicKey::parse(e.publicKey, "KEY");
  const auto op = trust::OperatorKey::load(e.key);
  fleet::EtcdClient client(etcdConfigOf(f));
  const std::string key = fleet::enrollmentKey(keys, e.node);
  const auto before = client.get(key);
  std::string previous;
  if (before) {
    // Whatever is there (another writer's): a "key" of another type is no key.
    const auto j = fleet::parseEtcdJson(before->value);
    const auto it = j.is_object() ? j.find("key") : j.end();
    if (it != j.end() && it->is_string()) previous = it->get<std::string>();
  }
  const int64_t at = unixNowMs();
  const auto revision =
      client.put(key, fleet::encodeEnrollment(f.cluster, e.node, publicKey, at, op));
  const bool same = previous == publicKey.text();
  if (f.json) {
    std::puts(jsonOut(json{{"cluster", f.cluster},
                           {"node", e.node},
                           {"key", publicKey.text()},
                           {"enrolled_by", op.publicKey().text()},
                           {"revision", revision},
                           {"previous_key", previous.empty() ? json(nullptr) : json(previous)}})
                  .c_str());
  } else if (previous.empty() || same) {
    printLine(fmt::format("enrolled {}: {} (revision {})", e.node, publicKey.text(), revision));
  } else {
    printLine(fmt::format("enrolled {}: {} (revision {}); it replaces {}", e.node, publicKey.text(),
                          revision, previous));
  }
  return kExitOk;
}

int runFleetForget(const FleetOptions& f, const FleetForgetOptions& g) {
  const auto keys = keysOf(f);
  for (const auto& node : g.nodes) fleet::checkFleetName(node, "NODE");
  fleet::EtcdClient client(etcdConfigOf(f));
  // Checked first, all of them: a refusal forgets nothing.
  const auto known = nodesIn(client.getPrefix(keys.nodesPrefix()), keys);
  std::vector<std::string> refusals;
  for (const auto& node : g.nodes) {
    const auto prefix = fleet::nodePrefix(keys, node);
    if (client.getPrefix(prefix).kvs.empty())
      refusals.push_back(fmt::format("node {}: no such node in cluster {} (nothing under {})", node,
                                     f.cluster, prefix));
    else if (!g.force && known.contains(node) && known.at(node).status)
      refusals.push_back(fmt::format(
          "node {} is up (its agent publishes a status); stop its agent first, or give --force",
          node));
  }
  if (!refusals.empty()) {
    std::string text;
    for (const auto& r : refusals) text += (text.empty() ? "" : "\n") + r;
    throw InputError("{}", text);
  }
  json out = json::array();
  for (const auto& node : g.nodes) {
    const auto removed =
        client.delPrefix(fleet::nodePrefix(keys, node)) + (client.del(keys.seen(node)) ? 1 : 0);
    if (f.json)
      out.push_back({{"node", node}, {"keys", removed}});
    else
      printLine(fmt::format("forgot {}: {} key(s) removed (declaration, status, enrollment …)",
                            node, removed));
  }
  if (f.json) std::puts(jsonOut(json{{"cluster", f.cluster}, {"forgotten", out}}).c_str());
  return kExitOk;
}

}  // namespace mesh::cli
