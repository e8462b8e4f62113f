// `fleet push --each DIR`: the per-node declarations an operator's own tools wrote, one
// file per node, DIR/<node>.toml, pushed in one push (fleet/push.hh, PushRequest::each).
#pragma once

#include <string>
#include <vector>

#include "fleet/push.hh"

namespace mesh::fleet {

// Every DIR/*.toml (regular files; other names are not read), sorted by node. Throws
// InputError naming the file whose name is not "<a node name>.toml" (checkFleetName), one
// that cannot be read, or a DIR that is no directory or holds no .toml file.
std::vector<NodeDeclaration> readEachDir(const std::string& dir);

}  // namespace mesh::fleet
