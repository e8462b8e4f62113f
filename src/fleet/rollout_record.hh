// A rollout's state in etcd (`fleet push --canary …`, fleet/rollout.hh), so that it outlives
// the operator's terminal: /mesh/<cluster>/rollout holds the current (or last) rollout,
// signed with the operator key that drives it, as a push record is:
//
//   {"record": "<the record's exact JSON text>", "signature": "mesh-sig:…"}
//
// The record: {"type": kRolloutRecordType, "serial", "digest", "declaration", "pushed_by",
// "started_at_ms", "updated_at_ms", "state", "wave" (0-based, the canary is wave 0),
// "waves": [[nodes]…], "reason", "options": {"canary", "wave", "min_healthy_ms",
// "healthy_deadline_ms", "auto_revert", "max_parallel_restarts"}, "previous": {node:
// {"digest", "serial"}}, "revert_serial", "driver"}. `previous` is what each target held
// before the rollout (digest "" when nothing), what a revert puts back; the bodies it
// names are kept while the rollout may still revert (fleet/push.cc).
//
// /mesh/<cluster>/rollout-driver is the driver's lock (fleet/push_lock.hh, on a lease):
// one process drives a rollout at a time; `fleet rollout resume` takes it over from a
// driver that died.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/etcd.hh"
#include "fleet/protocol.hh"
#include "trust/operator_key.hh"

namespace mesh::fleet {

inline constexpr std::string_view kRolloutRecordType = "mesh-host rollout record v1";

std::string rolloutKey(const FleetKeys& keys);        // "/mesh/<cluster>/rollout"
std::string rolloutDriverKey(const FleetKeys& keys);  // "/mesh/<cluster>/rollout-driver"

enum class RolloutState { Running, Halted, Done, Aborted, Reverted };
const char* rolloutStateName(RolloutState s);  // "running", "halted", …

struct RolloutOptions {
  int64_t canary = 1;
  std::string wave = "1";  // nodes per wave after the canary: "K" or "P%"
  int64_t minHealthyMs = 10'000;
  int64_t healthyDeadlineMs = 300'000;
  bool autoRevert = false;
  int64_t maxParallelRestarts = 0;
  bool operator==(const RolloutOptions&) const = default;
};

struct PreviousDeclaration {
  std::string digest;  // "sha256:…", "" nothing was there
  std::optional<int64_t> serial;
  bool operator==(const PreviousDeclaration&) const = default;
};

struct RolloutRecord {
  int64_t serial = 0;
  std::string digest;       // the declaration's
  std::string declaration;  // the path it was pushed from, for messages
  std::string pushedBy;     // "mesh-op:…"
  int64_t startedAtMs = 0, updatedAtMs = 0;
  RolloutState state = RolloutState::Running;
  int64_t wave = 0;                             // the wave in progress (or halted in)
  std::vector<std::vector<std::string>> waves;  // waves[0] the canary
  std::string reason;                           // why it halted, was aborted …
  RolloutOptions options;
  std::map<std::string, PreviousDeclaration> previous;
  std::optional<int64_t> revertSerial;  // the serial its revert pushed
  std::string driver;                   // "pid 123 on host"
  bool operator==(const RolloutRecord&) const = default;
};

// "rollout of serial 12: wave 2 of 5, halted: web-3 restarted web.service 4 times"
std::string rolloutLine(const RolloutRecord& r);

std::string encodeRolloutRecord(const RolloutRecord& r, const trust::OperatorKey& key);
// Throws InputError naming `where` when `text` is not a record's text.
RolloutRecord decodeRolloutText(std::string_view text, const std::string& where);

struct RolloutEntry {
  RolloutRecord record;
  int64_t revision = 0;  // the key's mod revision
  // Signed by one of the keys given, as its pushed_by; nullopt when none was given.
  std::optional<bool> verified;
};

// The record at rolloutKey(keys); nullopt when there is none. Throws InputError when the
// value there is not a record.
std::optional<RolloutEntry> readRollout(EtcdClient& etcd, const FleetKeys& keys,
                                        const std::vector<trust::OperatorPublicKey>& trusted);

// The record for a reader that only shows it (fleet status, fleet serve): nullopt when
// there is none or the value there is not a record. Throws Error when etcd fails.
std::optional<RolloutRecord> currentRollout(EtcdClient& etcd, const FleetKeys& keys);

// Puts `r` signed with `key` if the key's mod revision is still `revision` (0: absent);
// returns the new revision, nullopt when it changed meanwhile.
std::optional<int64_t> putRollout(EtcdClient& etcd, const FleetKeys& keys, const RolloutRecord& r,
                                  int64_t revision, const trust::OperatorKey& key);

// For `fleet push`, under the push lock: throws Error (nothing pushed) for a push that is
// not one of a rollout's waves (`inRollout`) while a rollout runs; returns the declaration
// bodies a rollout that may still go on or revert needs kept (its own, and what its
// targets held before it). A value there that is not a record counts as none.
std::set<std::string> guardAgainstRollout(EtcdClient& etcd, const FleetKeys& keys, bool inRollout);

}  // namespace mesh::fleet
