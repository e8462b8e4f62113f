// Why a service restarts or reloads in a cycle, in the words of its outcome's
// reason: shared by the kinds that drive a service (process, service).
#pragma once

#include <string>

#include "apply/context.hh"

namespace mesh::apply {

// "restart-on a.key, a.config", "reload-on a.conf" and/or "owed restart: a.key
// (cycle 3)", "owed reload: a.conf (cycle 3)", joined by "; ". A restart lists the
// reload causes it pays too. `self` is the resource's own id ("own unit").
std::string causeText(const std::string& self, const RestartCauses& c);

}  // namespace mesh::apply
