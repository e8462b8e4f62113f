// One node of a rollout's wave, judged from its status (fleet/protocol.hh): has it applied
// the pushed declaration, and has it stayed healthy for the rollout's --min-healthy since?
// Pure: no etcd, no clock read (the caller passes `nowMs`); what must be remembered between
// two looks at one node (when it was first seen healthy, its crash-restart counts when
// first seen on the pushed declaration) lives in the caller's NodeWatch.
//
// The rules, first that applies (docs/fleet.md, "Rollouts"):
//  1. it refused the very value pushed to it → halt;
//  2. it does not carry the pushed digest and serial yet → wait;
//  3. a cycle error, a failed resource or a churning one → halt;
//  4. a service whose health is "unhealthy", whose crash-restart count rose while watched,
//     or whose current run started after the cycle that applied the push finished (a
//     crash restart, or a start by hand) → halt;
//  5. a service not running, or whose health is still "starting" → wait (the healthy
//     clock starts again);
//  6. otherwise healthy since the first such look: once that is --min-healthy ago, the
//     node is healthy for the rollout.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "fleet/protocol.hh"

namespace mesh::fleet {

// What a wave pushed to a node.
struct RolloutTarget {
  int64_t serial = 0;
  std::string digest;  // the declaration's, "sha256:…"
  std::string value;   // valueDigest() of the value put at the node's key ("" not known)
};

// What the judge remembers of one node between two looks.
struct NodeWatch {
  std::optional<int64_t> healthySinceMs;
  std::map<std::string, int64_t> crashBaseline;  // service id -> restartsByCrash first seen
  bool seenApplied = false;
};

struct RolloutVerdict {
  enum class Kind { Waiting, Healthy, Halt };
  Kind kind = Kind::Waiting;
  std::string reason;       // why it waits or halts: "web-3 restarted web.service 4 times"
  int64_t healthyAtMs = 0;  // Waiting on the clock alone: when it will be healthy
};

RolloutVerdict judgeRolloutNode(const NodeStatus& s, const RolloutTarget& t, NodeWatch& w,
                                int64_t nowMs, int64_t minHealthyMs);

}  // namespace mesh::fleet
