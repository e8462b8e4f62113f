// `{node}` and `{cluster}`: the node a declaration lands on, named in its own text.
// The exact words are replaced — in a file's `content`, every kind's `path`, a link's
// `target` and a unit's values — when the declaration is parsed, so the model, plan,
// apply and the compiled form hold the substituted text. No other brace is touched,
// no template language: `{bundle}` and `{root}` stay for the unit's rendering.
//
// The node is --node (default the hostname); the cluster is the agent's --cluster in
// fleet mode, else the declaration's own top-level `cluster = "…"`; a declaration that
// uses {cluster} where neither is known is refused (ParseOptions::cluster).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mesh::decl {

struct Placeholders {
  std::string node;
  std::optional<std::string> cluster;
};

// Why `value` cannot be substituted ({cluster} used, none known); nullopt when it can.
std::optional<std::string> placeholderProblem(std::string_view value, const Placeholders& p);
// `value` with every {node} and {cluster} replaced (placeholderProblem first).
std::string substitutePlaceholders(std::string_view value, const Placeholders& p);

}  // namespace mesh::decl
