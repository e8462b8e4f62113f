// Starting mesh-host-supervise for one service, fully detached from mesh-host:
// double fork, new session, stdin/stdout/stderr on /dev/null, every descriptor
// closed but the readiness pipe, SIGHUP ignored, signal mask cleared. It is
// re-parented at once, so it outlives mesh-host's exit, crash, restart or upgrade.
#pragma once

#include <string>

#include "supervise/builtin/service_files.hh"

namespace mesh::supervise::builtin {

// Returns the supervisor's first reply (started, adopted, failed, busy), read
// from the readiness pipe within `timeoutMs`. A supervisor that dies before
// answering is a Reply::fail naming the last line of the service's log.
Reply spawnSupervisor(const std::string& exe, const ServicePaths& paths, bool adoptOnly,
                      int timeoutMs);

}  // namespace mesh::supervise::builtin
