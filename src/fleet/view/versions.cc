#include "fleet/view/versions.hh"

#include <algorithm>

namespace mesh::fleet {

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

}  // namespace mesh::fleet
