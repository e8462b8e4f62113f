// One node as `fleet serve`'s node page shows it, read from etcd when the page asks: the
// node judged as `fleet status` judges it (fleet/view.hh), its services, its last report
// (fleet/report.hh: every outcome that was not unchanged, with reasons and diffs; checked
// against the node's enrolled key like its status), and the pushes whose selector names
// it (fleet/push_history.hh). Reads the node's own keys only: a few keys, whatever the
// size of the fleet.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fleet/etcd.hh"
#include "fleet/protocol.hh"
#include "trust/operator_key.hh"

namespace mesh::fleet {

// {"schema", "cluster", "node", "revision", "known", "view" (the node's object of the
// fleet JSON, null when etcd holds nothing of it), "services", "applied_cycle", "report"
// (null, or {"verified", "problem", …the report's fields}), "pushes"}. docs/fleet.md.
nlohmann::json nodeDetail(EtcdClient& etcd, const FleetKeys& keys, const std::string& node,
                          const std::vector<trust::OperatorPublicKey>& trusted, int64_t nowMs);

// Whether a push record's selector text ("web-*, db1") names `node`.
bool selectorNames(const std::string& selectorText, const std::string& node);

}  // namespace mesh::fleet
