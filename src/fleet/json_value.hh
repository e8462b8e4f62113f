// Every JSON value read from etcd is parsed here: malformed or nested deeper than
// kMaxJsonDepth (util/json_depth.hh), it is a discarded value, which each decoder
// refuses as "not a …" like any other malformed one.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "util/json_depth.hh"

namespace mesh::fleet {

inline nlohmann::json parseEtcdJson(std::string_view text) {
  if (jsonNestsDeeperThan(text)) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace mesh::fleet
