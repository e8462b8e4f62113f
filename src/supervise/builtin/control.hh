// The control socket: one command line in, one reply line out, then close.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "util/fd.hh"

namespace mesh::supervise::builtin {

// Binds and listens on a unix stream socket at `path` (a stale socket there is
// replaced). Paths longer than sun_path are reached through /proc/self/fd.
Fd listenUnix(const std::string& path);

// Connects to `path`; an invalid Fd when nobody listens there (ENOENT,
// ECONNREFUSED) — a supervisor that just exited or was killed.
Fd connectUnix(const std::string& path);

// Reads up to and including '\n'. nullopt on EOF before a full line, or when
// `timeoutMs` (−1: none) passes — then `timedOut` is set.
std::optional<std::string> readLine(int fd, int timeoutMs, bool* timedOut = nullptr);

// Writes all of `data`, ignoring a peer that went away (no SIGPIPE).
bool writeAll(int fd, std::string_view data);

// Sends `command` and waits for the reply line. nullopt when the supervisor
// went away first (not listening, or closed without answering); throws
// mesh::Error on a timeout.
std::optional<std::string> exchange(const std::string& socketPath, std::string_view command,
                                    int timeoutMs);

}  // namespace mesh::supervise::builtin
