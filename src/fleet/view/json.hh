// The fleet's view (fleet/view.hh) as JSON: the tree, and the same bytes written straight
// into a string for a large fleet. Both live here, and a test holds them equal
// (FleetView.TheJsonTextIsTheJsonTreeDumped).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "fleet/view.hh"

namespace mesh::fleet {

// The object `fleet status --json` prints and `fleet serve` sends (docs/fleet.md):
// {"schema", "cluster", "revision", "nodes", "rollout", "summary", "versions"}.
nlohmann::json fleetJson(const FleetView& v);
// fleetJson(v).dump(), byte for byte, written straight into the text: a fleet of 10,000
// nodes without a tree of 250,000 JSON values built and torn down (`fleet status --json`).
std::string fleetJsonText(const FleetView& v);
// A rollout as `fleet status --json` ("rollout") and `fleet rollout status --json` show it:
// {"serial", "digest", "state", "wave" (1-based), "waves", "reason", "canary": [nodes],
// "nodes": [[nodes of each wave]], "pushed_by", "started_at", "updated_at", "driver",
// "options", "revert_serial"}; null for none.
nlohmann::json rolloutJson(const std::optional<RolloutRecord>& r);

}  // namespace mesh::fleet
