#include "apply/kinds/unit_text.hh"

#include <fmt/format.h>

#include "util/faults.hh"
#include "util/unit_keys.hh"

namespace mesh::apply {

namespace {

std::string replaceAll(const std::string& value, const std::string& what, const std::string& with) {
  std::string out;
  size_t at = 0;
  for (size_t hit; (hit = value.find(what, at)) != std::string::npos; at = hit + what.size())
    out += value.substr(at, hit - at) + with;
  return out + value.substr(at);
}

// TEST-ONLY SEAM fault::kRenderUnitV2 (util/faults.hh).
bool renderingV2ForTests() {
  return faultSet(fault::kRenderUnitV2);
}

}  // namespace

supervise::Unit renderUnit(const std::string& id, const decl::ProcessSpec& spec,
                           const std::string& bundleDir, const std::string& root) {
  const std::string rootPrefix = root == "/" ? "" : root;
  supervise::Unit u;
  u.name = spec.service;
  std::map<std::string, std::vector<std::string>> unitKeys, installKeys;
  unitKeys["Description"] = {"mesh-host process " + id};
  installKeys["WantedBy"] = {"multi-user.target"};
  for (const auto& [key, values] : spec.unit) {
    std::vector<std::string> expanded;
    for (const auto& v : values)
      expanded.push_back(replaceAll(replaceAll(v, "{bundle}", bundleDir), "{root}", rootPrefix));
    // The section systemd reads the key from (declarations hold only the table's
    // keys; any other is a [Service] key, as builtin's own extensions are).
    const UnitKey* row = findUnitKey(key);
    const UnitSection in = row ? row->section : UnitSection::Service;
    if (in == UnitSection::Unit)
      unitKeys[key] = std::move(expanded);
    else if (in == UnitSection::Install)
      installKeys[key] = std::move(expanded);
    else
      u.service[key] = std::move(expanded);
  }
  auto section = [](const char* name, const std::map<std::string, std::vector<std::string>>& keys) {
    std::string s = fmt::format("[{}]\n", name);
    for (const auto& [key, values] : keys)
      for (const auto& v : values) s += fmt::format("{}={}\n", key, v);
    return s;
  };
  u.text = fmt::format("# Managed by mesh-host ({}); edits are drift and will be reverted.\n", id) +
           section("Unit", unitKeys) + "\n" + section("Service", u.service) + "\n" +
           section("Install", installKeys);
  if (renderingV2ForTests())
    u.text += "\n# (rendered by mesh-host's next unit format: a test seam)\n";
  return u;
}

}  // namespace mesh::apply
