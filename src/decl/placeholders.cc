#include "decl/placeholders.hh"

namespace mesh::decl {

namespace {
constexpr std::string_view kNode = "{node}";
constexpr std::string_view kCluster = "{cluster}";
}  // namespace

std::optional<std::string> placeholderProblem(std::string_view value, const Placeholders& p) {
  if (p.node.empty() && value.find(kNode) != std::string_view::npos)
    return std::string("uses {node} but no node name is known; give --node NAME");
  if (!p.cluster && value.find(kCluster) != std::string_view::npos)
    return std::string(
        "uses {cluster} but no cluster is known: the agent's --cluster names it in fleet mode; "
        "elsewhere declare it at the top level, e.g. cluster = \"prod\"");
  return std::nullopt;
}

std::string substitutePlaceholders(std::string_view value, const Placeholders& p) {
  std::string out;
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size();) {
    if (value.substr(i, kNode.size()) == kNode) {
      out += p.node;
      i += kNode.size();
    } else if (p.cluster && value.substr(i, kCluster.size()) == kCluster) {
      out += *p.cluster;
      i += kCluster.size();
    } else {
      out += value[i++];
    }
  }
  return out;
}

}  // namespace mesh::decl
