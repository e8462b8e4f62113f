// One run of a process's declared health check (`health = { exec = … }`): the command,
// split as ExecStart is (no shell), run as the process's User= when one is declared, in a
// process group of its own that is killed whole at the timeout. Its output is read up to
// kProbeOutputKept bytes (the rest is drained and dropped); only the first line of it,
// cut to kProbeReasonMax and escaped, ever leaves here — in the reason — so a probe that
// prints a secret does not put it in the logs or etcd whole.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace mesh::agent {

inline constexpr size_t kProbeOutputKept = 4096;
inline constexpr size_t kProbeReasonMax = 200;

struct Probe {
  std::vector<std::string> argv;  // argv[0] absolute, or looked up in PATH
  std::optional<uid_t> uid;       // run as (and its gid); nullopt: as the agent
  std::optional<gid_t> gid;
  std::chrono::milliseconds timeout{5000};
};

struct ProbeResult {
  bool passed = false;
  // "" when passed; else "exit 1: connection refused", "timed out after 2000 ms",
  // "killed by signal 9", "cannot run /x: No such file or directory".
  std::string reason;
};

// Runs `p` to its end or its timeout; never throws for what the probe does.
ProbeResult runProbe(const Probe& p);

// The reason for an exit: "exit N" and, when there was output, ": <first line>"
// (cut, control bytes escaped).
std::string probeReason(const std::string& what, const std::string& output);

}  // namespace mesh::agent
