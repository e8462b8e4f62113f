// What nodes and operators exchange through etcd: the key layout, the pushed
// declaration (the signed TOML, its detached signature and push metadata) and
// the status a node publishes on its lease. Both are JSON values; docs/etcd.md
// and docs/fleet.md describe every field.
//
//   /mesh/<cluster>/nodes/<node>/declaration   PushedDeclaration (fleet/statement.hh, put
//                                              by `fleet push`)
//   /mesh/<cluster>/nodes/<node>/status        NodeStatus on the node's lease (gone when
//                                              the node is), put only when it changed
//                                              materially (sameMaterially) or the lease is new
//   /mesh/<cluster>/seen/<node>                NodeStatus, no lease: the last one put,
//                                              so that `fleet status` can say what a down
//                                              node had applied; out of the nodes prefix,
//                                              read only when a node is down (readFleet).
//                                              An agent from before put it at
//                                              .../nodes/<node>/seen (legacySeen)
//   /mesh/<cluster>/restarts/<service>/<slot>  a rolling-restart slot held by a node
//   /mesh/<cluster>/push-lock                  held by the `fleet push` writing (fleet/push.hh)
//   /mesh/<cluster>/declarations/<hex>         a declaration's bytes, stored once by digest;
//                                              over kBodyChunkBytes, a manifest instead
//                                              (fleet/bodies.hh) …
//   /mesh/<cluster>/declarations/<hex>/<i>     … and its chunks, i = 000000, 000001, …
//   /mesh/<cluster>/pushes/<ms>-<hex12>        one push's record (fleet/push_history.hh):
//                                              <ms> its unix ms, 16 digits; the last
//                                              kKeptPushes are kept
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fleet/etcd.hh"

namespace mesh::fleet {

inline constexpr std::string_view kDefaultCluster = "default";

// Throws InputError unless `name` is a usable node, cluster or service name:
// 1–128 of [A-Za-z0-9._@-], not "." or "..". `what` names the option ("--node").
void checkFleetName(const std::string& name, const std::string& what);

struct FleetKeys {
  std::string cluster;

  std::string nodesPrefix() const;  // "/mesh/<cluster>/nodes/"
  std::string declaration(const std::string& node) const;
  std::string status(const std::string& node) const;
  std::string seen(const std::string& node) const;             // seenPrefix() + node
  std::string seenPrefix() const;                              // "/mesh/<cluster>/seen/"
  std::string legacySeen(const std::string& node) const;       // ".../nodes/<node>/seen"
  std::string restartSlots(const std::string& service) const;  // ".../restarts/<service>/"
  std::string pushLock() const;                                // "/mesh/<cluster>/push-lock"
  // Declaration bodies, stored once by digest: "/mesh/<cluster>/declarations/".
  std::string bodiesPrefix() const;
  // The body of a "sha256:<hex>" digest: bodiesPrefix() + "<hex>".
  std::string body(const std::string& digest) const;
  // Chunk `index` of a body stored in chunks: body(digest) + "/" + 6 digits.
  std::string bodyChunk(const std::string& digest, int64_t index) const;
  // The record of every push, sorting by time: "/mesh/<cluster>/pushes/".
  std::string pushesPrefix() const;
  // One push's record: pushesPrefix() + 16-digit unix ms + "-" + 12 hex of the digest.
  std::string push(int64_t pushedAtMs, const std::string& digest) const;

  // For a key under nodesPrefix(): the node and the last component ("status" …);
  // nullopt for anything else.
  std::optional<std::pair<std::string, std::string>> splitNodeKey(std::string_view key) const;
};

// What etcd holds for one node, from one range read.
struct NodeKeys {
  std::optional<EtcdKeyValue> declaration, status, seen;
  // Signed by an operator and by the node (fleet/enroll.hh, fleet/node_signed.hh).
  std::optional<EtcdKeyValue> enrollment, heartbeat;
};

// Every node with a declaration, status, seen, enrollment or heartbeat key under
// keys.nodesPrefix(), or a seen copy under keys.seenPrefix() (of two seen copies, the
// newer); other keys are ignored.
std::map<std::string, NodeKeys> nodesIn(const EtcdRange& range, const FleetKeys& keys);
// The same, the values moved out of `range` rather than copied (a reader done with it).
std::map<std::string, NodeKeys> nodesIn(EtcdRange&& range, const FleetKeys& keys);

// What `fleet status` and `fleet serve` judge by: every key under the nodes prefix and,
// only when a node there has no live status, the seen copies too (appended: the range
// stays sorted). A node known by nothing but a seen copy is not listed while every other
// node is up.
// `onKv`, when given, is shown each key of the nodes prefix as it is read (getPrefix).
EtcdRange readFleet(EtcdClient& etcd, const FleetKeys& keys,
                    const EtcdClient::KvObserver& onKv = {});

struct NodeStatus {
  std::string node;
  std::string cluster;
  std::string version;  // mesh-host's
  int64_t pid = 0;
  int64_t publishedAtMs = 0;  // unix ms when this status was put (last seen)
  int64_t intervalMs = 0;     // the agent's interval

  // What is applied: the last cycle's declaration. 0 / nullopt before any cycle.
  int64_t generation = 0;
  std::optional<int64_t> serial;
  std::string declarationDigest;  // sha256:<hex> of the applied text, "" none
  int64_t revision = 0;           // etcd mod revision of the applied declaration, 0 none

  int64_t cycle = 0;
  int64_t lastCycleAtMs = 0;  // unix ms the last cycle finished
  int64_t cycleMs = 0;
  std::string trigger;  // why the last cycle ran ("etcd revision 12", "interval" …)
  int64_t created = 0, updated = 0, unchanged = 0, removed = 0, released = 0, skipped = 0,
          failed = 0;
  std::vector<std::pair<std::string, std::string>> failing;  // (id, reason)
  std::vector<std::string> churning;                         // ids
  std::string cycleError;  // the last cycle could not run at all, "" none

  // The agent's cycles only plan: paused (`mesh-host pause`: why, who, since when), or
  // `run --noop`. What is applied above stays what the last applying cycle applied;
  // `pending` counts what the last planning cycle found it would change.
  struct Pause {
    std::string reason;
    std::string user;
    int64_t uid = 0;
    int64_t sinceMs = 0;
    bool operator==(const Pause&) const = default;
  };
  std::optional<Pause> paused;
  bool noop = false;
  int64_t pending = 0;

  // The newest pushed declaration this node refused (bad signature, older serial,
  // invalid TOML …); cleared when a later revision is accepted.
  struct Refusal {
    int64_t revision = 0;
    std::optional<int64_t> serial;  // as the envelope claimed
    std::string reason;
    int64_t atMs = 0;
    // Which value it refused: valueDigest() of the etcd value, so that `fleet status` and
    // `push --wait` tell a refusal of what is pushed now from an older one without
    // comparing etcd revisions; and the declaration digest its statement claimed ("").
    std::string valueDigest;
    std::string declarationDigest;
    bool operator==(const Refusal&) const = default;
  };
  std::optional<Refusal> refused;

  // Convergence by content (docs/fleet.md). The first cycle of this agent that ran
  // the declaration in force (declarationDigest and serial): `push --wait` quotes it,
  // not a later cycle that had nothing left to do. nullopt before any cycle.
  struct AppliedCycle {
    int64_t cycle = 0;
    int64_t atMs = 0;
    int64_t created = 0, updated = 0, unchanged = 0, removed = 0, released = 0, skipped = 0,
            failed = 0;
    bool operator==(const AppliedCycle&) const = default;
  };
  std::optional<AppliedCycle> appliedCycle;

  // The node's services — every `process` and `service` resource of the applied
  // declaration — as the agent last looked at them. The agent keeps them fresh between
  // cycles (it looks every few seconds and puts its status when one changes materially),
  // so that a rollout (`fleet push --canary`) and `fleet serve` can tell whether what a
  // push restarted stays up. Sorted by id.
  struct Service {
    std::string id;    // the resource id ("process:web", "service:nginx")
    std::string unit;  // "web.service"
    bool running = false;
    // Unix ms its current run started: its supervisor's start of the main process
    // (0 when not running or not known). A run that started after appliedCycle->atMs
    // was started by no cycle of this declaration: a crash restart or a start by hand.
    int64_t upSinceMs = 0;
    int64_t restartsByMeshHost = 0;  // as `mesh-host status` counts them (for ever)
    int64_t restartsByCrash = 0;     // restarts by its supervisor (Restart=), for ever
    // Its declared health (`health = { exec = … }`, or READY=1 for Type=notify):
    // "" none declared, "starting" (not passed yet since its run started), "healthy",
    // "unhealthy" (healthReason says why: "exit 1: connection refused", "timed out").
    std::string health;
    std::string healthReason;
    bool operator==(const Service&) const = default;
  };
  std::vector<Service> services;
  std::string etcdClusterId;  // the etcd cluster the node reads from ("" not known yet)
  // The etcd lease the status is put on (0: none named, an agent before statuses named
  // it): signed, so a status moved to another lease is told from the one its node put.
  int64_t lease = 0;

  bool operator==(const NodeStatus&) const = default;
};

// Whether two statuses differ only in what changes every cycle by itself — the cycle's
// number, when it finished, how long it took, its trigger — and when they were put. An
// agent puts its status only when this is false (or on a new lease), so an idle node
// writes nothing to etcd; everything a reader judges by (what is applied, the counts,
// failing, churning, a refusal, a cycle error, version, pid, interval, etcd's cluster ID,
// the lease, each service's running state, start, restart counts and health) is material.
bool sameMaterially(const NodeStatus& a, const NodeStatus& b);

std::string encodeStatus(const NodeStatus& s);
// The cycle a status reports, as an AppliedCycle (its number, time and counts).
NodeStatus::AppliedCycle appliedCycleOf(const NodeStatus& s);
// Whether a status shows a failed resource or a cycle that could not run.
bool isFailing(const NodeStatus& s);
// Throws InputError naming `where` when `json` is not a node status.
NodeStatus decodeStatus(std::string_view json, const std::string& where);

}  // namespace mesh::fleet
