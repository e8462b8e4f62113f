// How a serial and a digest read in the view's reasons (view/judge.cc) and in `fleet
// status`'s table (view/text.cc): "-" for none, a digest shortened.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fleet/statement.hh"

namespace mesh::fleet {

inline std::string serialText(const std::optional<int64_t>& v) {
  return v ? std::to_string(*v) : "-";
}

inline std::string digestText(const std::string& digest) {
  return digest.empty() ? "-" : shortDigest(digest);
}

}  // namespace mesh::fleet
