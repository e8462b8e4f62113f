#include "fleet/recipients.hh"

#include <fmt/format.h>

#include <algorithm>

#include "fleet/enroll.hh"
#include "util/error.hh"

namespace mesh::fleet {

Recipients enrolledRecipients(EtcdClient& etcd, const FleetKeys& keys, const Selector& selector,
                              const std::vector<trust::OperatorPublicKey>& trusted) {
  const auto known = nodesIn(etcd.getPrefix(keys.nodesPrefix()), keys);
  Recipients out;
  std::vector<std::string> refusals;
  const auto names = selector.names();
  const auto globs = selector.globs();
  std::vector<bool> globMatched(globs.size(), false);
  for (const auto& [node, k] : known) {
    if (!selector.matches(node)) continue;
    try {
      checkFleetName(node, "node");
    } catch (const InputError&) {
      ++out.invalidNames;  // an etcd writer's: no node takes that name
      continue;
    }
    std::vector<EtcdKeyValue> signedKeys;
    for (const auto* kv : {&k.status, &k.heartbeat})
      if (*kv) signedKeys.push_back(**kv);
    const NodeTrust t = checkNode(keys.cluster, node, k.enrollment, signedKeys, trusted);
    if (t.verdict == NodeTrust::Verdict::Forged && !t.enrollment) {
      refusals.push_back(fmt::format(
          "node {}: its enrollment does not verify against the --trust keys: {}", node, t.reason));
    } else if (t.verdict == NodeTrust::Verdict::Forged) {
      refusals.push_back(fmt::format(
          "node {}: its key does not match its enrollment ({}); enroll its key again (mesh-host "
          "fleet enroll {} KEY, KEY as mesh-host key show prints it there), then seal",
          node, t.reason, node));
    } else if (t.verdict == NodeTrust::Verdict::Unenrolled) {
      refusals.push_back(fmt::format("node {}: {}", node, t.reason));
    } else if (!t.enrollment) {
      out.skipped.push_back(node);
    } else {
      out.nodes.push_back({node, t.enrollment->key});
      for (std::size_t i = 0; i < globs.size(); ++i)
        if (Selector{{globs[i]}}.matches(node)) globMatched[i] = true;
    }
  }
  for (const auto& name : names) {
    const bool enrolled = std::any_of(out.nodes.begin(), out.nodes.end(),
                                      [&](const Recipient& r) { return r.node == name; });
    const bool refused = std::any_of(refusals.begin(), refusals.end(), [&](const std::string& r) {
      return r.starts_with("node " + name + ":");
    });
    if (!enrolled && !refused)
      refusals.push_back(fmt::format(
          "node {}: not enrolled in cluster {}; enroll it first (mesh-host fleet enroll {} KEY)",
          name, keys.cluster, name));
  }
  for (std::size_t i = 0; i < globs.size(); ++i)
    if (!globMatched[i])
      refusals.push_back(fmt::format("--nodes: \"{}\" matches no enrolled node in cluster {}",
                                     globs[i], keys.cluster));
  if (!refusals.empty()) throw InputError("seal: nothing sealed:\n{}", fmt::join(refusals, "\n"));
  return out;
}

}  // namespace mesh::fleet
