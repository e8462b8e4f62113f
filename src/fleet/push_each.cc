#include "fleet/push_each.hh"

#include <algorithm>
#include <filesystem>

#include "fleet/protocol.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::fleet {

std::vector<NodeDeclaration> readEachDir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError("--each {}: not a directory; give the directory that holds <node>.toml files",
                     dir);
  std::vector<NodeDeclaration> out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".toml")) continue;
    const std::string path = entry.path().string();
    if (!entry.is_regular_file(ec))
      throw InputError("--each: {} is not a regular file; give each node one <node>.toml file",
                       path);
    const std::string node = name.substr(0, name.size() - 5);
    try {
      checkFleetName(node, "node");
    } catch (const InputError& e) {
      throw InputError("--each: {}: its name is not <node>.toml for a node name: {}", path,
                       e.what());
    }
    std::optional<std::string> text;
    try {
      text = readFile(path);
    } catch (const SysError& e) {
      throw InputError("--each: cannot read {}: {}", path, e.what());
    }
    if (!text) throw InputError("--each: {} went away while it was read", path);
    out.push_back({node, path, std::move(*text)});
  }
  if (ec) throw InputError("--each {}: cannot list it: {}", dir, ec.message());
  if (out.empty())
    throw InputError("--each {}: no <node>.toml file in it; one file per node, named after it",
                     dir);
  std::sort(out.begin(), out.end(),
            [](const NodeDeclaration& a, const NodeDeclaration& b) { return a.node < b.node; });
  return out;
}

}  // namespace mesh::fleet
