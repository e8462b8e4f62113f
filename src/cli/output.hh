// Rendering cycle reports: the human lines and the JSON object of DESIGN.md.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "apply/reconcile.hh"

namespace mesh::cli {

// "created demo.config (demo): 12 bytes, mode 0644" — detail, then the reason
// (omitted when it is just "new").
std::string outcomeLine(const apply::ResourceResult& r, bool plan);
std::string summaryLine(const apply::CycleReport& r, bool plan);
nlohmann::json reportJson(const apply::CycleReport& r, const std::string& node, bool plan);

}  // namespace mesh::cli
