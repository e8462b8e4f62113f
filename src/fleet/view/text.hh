// The fleet's view (fleet/view.hh) as `fleet status` prints it: the table (one row per node,
// columns padded to their widest cell), each reason of a node that is not converged, the
// versions and who pushed them, and a tally. Output: docs/fleet.md.
#pragma once

#include <string>
#include <vector>

#include "fleet/view.hh"

namespace mesh::fleet {

// The lines to print, without their '\n'; "" for a blank line. Cells from etcd (a node's
// name is its key) are escaped (util/text_safe.hh) so that none draws over another row;
// the lines still go through the caller's escaping for a terminal.
std::vector<std::string> fleetTextLines(const FleetView& v);

}  // namespace mesh::fleet
