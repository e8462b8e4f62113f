// The record of every `fleet push`: who pushed what to which selector, when, and with
// what result, at /mesh/<cluster>/pushes/<16-digit unix ms>-<12 hex of the digest>
// (FleetKeys::push), so that keys sort by time. A push writes its record under the
// push lock, after its statements, and deletes all but the newest kKeptPushes; with
// --wait it adds the outcome counts afterwards. `fleet history` lists them.
//
// A record is informational: anyone who can write etcd can write one. What nodes act
// on is the signed statement alone. A record is signed with the pushing operator key
// all the same, so that `fleet history --trust KEY` can tell a record that key wrote
// from one it did not. The value:
//
//   {"record": "<the record's exact JSON text>", "signature": "mesh-sig:…"}
//
// where the record is {"type": kPushRecordType, "digest", "serial", "pushed_by",
// "pushed_at_ms", "selector", "nodes", "results": {"pushed", "unchanged", "conflict"},
// "outcomes": null or {"applied", "failed", "refused", "timed_out"}}, and "texts" for a
// push of each node's own declaration (--each); "rollout" for a rollout's wave and
// "revert_of" for its revert (below).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/etcd.hh"
#include "fleet/protocol.hh"
#include "trust/operator_key.hh"

namespace mesh::fleet {

// How many push records a push keeps (the newest); older ones it deletes.
inline constexpr std::size_t kKeptPushes = 100;
inline constexpr std::string_view kPushRecordType = "mesh-host push record v1";

struct PushRecord {
  std::string digest;  // the declaration's, "sha256:…" (--each: PushReport::digest)
  int64_t texts = 0;   // --each: how many distinct texts ("texts"; absent: 0, one text)
  int64_t serial = 0;
  std::string pushedBy;  // "mesh-op:…"
  int64_t pushedAtMs = 0;
  std::string selector;  // Selector::text()
  int64_t nodes = 0;     // targets, conflicts included
  int64_t pushed = 0, unchanged = 0, conflict = 0;
  struct Outcomes {
    int64_t applied = 0, failed = 0, refused = 0, timedOut = 0;
    bool operator==(const Outcomes&) const = default;
  };
  std::optional<Outcomes> outcomes;  // after --wait
  // A wave of a rollout (fleet/rollout.hh): its rolloutLine() when the wave ended ("rollout";
  // "" a plain push); a rollout's revert: the serial it reverts ("revert_of").
  std::string rollout;
  std::optional<int64_t> revertOf;
  bool operator==(const PushRecord&) const = default;
};

// The signed value of a record.
std::string encodePushRecord(const PushRecord& r, const trust::OperatorKey& key);

struct PushHistoryEntry {
  std::string key;
  std::optional<PushRecord> record;  // nullopt: the value is not a record (`problem` says why)
  std::string problem;
  // Against the keys given to readPushHistory: signed by one of them, which is the
  // record's pushed_by. nullopt when no key was given (nothing checked).
  std::optional<bool> verified;
};

// The records, newest first, at most `limit` (0: all). `trusted` empty: none verified.
std::vector<PushHistoryEntry> readPushHistory(EtcdClient& etcd, const FleetKeys& keys,
                                              std::size_t limit,
                                              const std::vector<trust::OperatorPublicKey>& trusted);

// One record's value as it was read at `key` (what readPushHistory does for each):
// never throws for what the value holds, says it in `problem`.
PushHistoryEntry readPushRecord(const std::string& key, std::string_view value,
                                const std::vector<trust::OperatorPublicKey>& trusted);

// Writes `r` at keys.push(…), then deletes all but the newest kKeptPushes records.
// Returns the record's key and the revision of its put.
std::pair<std::string, int64_t> recordPush(EtcdClient& etcd, const FleetKeys& keys,
                                           const PushRecord& r, const trust::OperatorKey& key);

// Rewrites the record at `recordKey` (put at `revision`) with `r`, unless it has changed
// or gone since (trimmed by newer pushes): returns whether it did.
bool updatePushRecord(EtcdClient& etcd, const std::string& recordKey, int64_t revision,
                      const PushRecord& r, const trust::OperatorKey& key);

}  // namespace mesh::fleet
