// How many descriptors one of mesh-host's caches of open directories and files
// may hold. The process's limit on open files (RLIMIT_NOFILE, its soft value) is
// often 1024 — systemd's default for a service, a login shell's — and a
// declaration may span thousands of directories: each cache takes a share of the
// limit, so that together they stay well within it, and reopens what it let go.
// mesh-host does not raise its limit: what it starts (services under the builtin
// supervisor, health checks, the account tools) inherits it.
#pragma once

#include <cstddef>

namespace mesh {

// The limit over `parts`, at most `most` and at least 8; the limit read once.
size_t openFilesShare(size_t most, size_t parts);

}  // namespace mesh
