// `fleet push --canary N --wave K|P% …`: a rollout that stops itself. The declaration goes
// to the canary nodes first, then wave after wave; before each next wave, every node of
// the last one must have applied it and stayed healthy for --min-healthy
// (fleet/rollout_judge.hh) within --healthy-deadline. A node that fails, churns, crashes a
// service, refuses the value or misses the deadline halts the rollout: the nodes not yet
// reached are never written. With --auto-revert the nodes already on it get their previous
// declaration back, with a new serial (one push of each node's own text, recorded as a
// revert). The state lives in etcd (fleet/rollout_record.hh), so `fleet rollout
// status|resume|abort` work from any terminal; docs/fleet.md describes the workflow.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fleet/etcd.hh"
#include "fleet/push.hh"
#include "fleet/rollout_record.hh"
#include "trust/operator_key.hh"

namespace mesh::fleet {

// Splits `targets` (sorted) into waves: the first `canary` nodes, then waves of K nodes,
// or of P% of all targets (rounded up, at least one). Throws InputError for a bad --wave
// ("3", "25%") or a canary of fewer than 1 node.
std::vector<std::vector<std::string>> planWaves(const std::vector<std::string>& targets,
                                                int64_t canary, const std::string& wave);
// Throws InputError naming --wave unless `wave` is "K" (K ≥ 1) or "P%" (0 < P ≤ 100).
void checkWaveSpec(const std::string& wave);

// `text` with its top-level `serial = N` line saying `serial` instead (a revert pushes a
// node's previous declaration under a new serial). Throws InputError when there is none.
std::string withSerial(const std::string& text, int64_t serial, const std::string& where);

struct RolloutEvents {
  std::function<void(const std::string&)> say;   // a line for stdout
  std::function<void(const std::string&)> warn;  // a line for stderr
};

struct RolloutRequest {
  PushRequest push;  // what, to which nodes, the push lock's timeout
  RolloutOptions options;
  // The operator keys whose enrollments make a node's status count (the pushing key's are
  // always counted).
  std::vector<trust::OperatorPublicKey> trusted;
};

// Starts a rollout and drives it to its end: done, halted, reverted or aborted (by
// `fleet rollout abort` meanwhile). Throws InputError (nothing pushed) for bad input,
// Error when another rollout runs or etcd fails.
RolloutRecord startRollout(EtcdClient& etcd, const trust::OperatorKey& key,
                           const RolloutRequest& request, const RolloutEvents& events);

// Takes over the cluster's rollout: waits (up to `lockTimeout`) for the driver lock of a
// driver that died, then goes on from the wave it was in (that wave pushed again, which
// leaves what it already holds unchanged, and judged from a fresh look). A halted rollout
// goes on with the wave after the one it halted in ("continue anyway"). Throws InputError
// when there is nothing to resume (no rollout, or one done, aborted or reverted).
RolloutRecord resumeRollout(EtcdClient& etcd, const trust::OperatorKey& key,
                            const std::string& cluster,
                            const std::vector<trust::OperatorPublicKey>& trusted,
                            std::chrono::milliseconds lockTimeout, const RolloutEvents& events);

// Stops the cluster's running or halted rollout: the nodes it has not reached keep their
// declaration; with `revert`, the nodes it reached get their previous one back. A driver
// still running stops before its next write (it checks the record under the push lock).
RolloutRecord abortRollout(EtcdClient& etcd, const trust::OperatorKey& key,
                           const std::string& cluster, bool revert,
                           std::chrono::milliseconds lockTimeout, const RolloutEvents& events);

}  // namespace mesh::fleet
