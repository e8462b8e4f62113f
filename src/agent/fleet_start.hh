// What a node publishes when its agent starts, before its first cycle ends: what the
// state store says it applied, so that `fleet status` does not show a node that runs
// the previous declaration as "applied revision 0 (serial -)" meanwhile.
#pragma once

#include <string>

#include "agent/fleet_link.hh"
#include "fleet/protocol.hh"

namespace mesh::agent {

// The last finished cycle's generation, cycle and counts; and when that generation is
// `cached` (the pushed declaration the node starts with), its revision, serial and
// digest. Nothing from the store when there is none or it cannot be read (logged by
// the cycle that opens it next).
fleet::NodeStatus statusFromStore(const std::string& stateDir, const AcceptedDeclaration* cached);

}  // namespace mesh::agent
