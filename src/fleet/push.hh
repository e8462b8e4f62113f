// `mesh-host fleet push` without its command line: sign a statement for a declaration
// and put it to nodes' declaration keys, one push at a time per cluster, then (--wait)
// judge by content whether each node applied it. The CLI (src/cli/cmd_fleet_push.cc)
// only parses options and prints; docs/fleet.md describes the behaviour.
//
// Order, so that a refusal or a lost race pushes nothing:
//  1. take the cluster's push lock (/mesh/<cluster>/push-lock: a key created only when
//     absent, on a lease of its own): a second push waits for it, up to lockTimeout,
//     then fails having written nothing;
//  2. list the node keys (names only) and read each node's declaration key at that
//     revision, in read-only transactions; resolve the selector's globs against the
//     nodes etcd knows (a glob matching none is bad input);
//  3. parse the declaration as a node would; it needs a serial, and a `node = "…"` may
//     only be pushed to that node;
//  4. per node, compare with what is there, counting only a statement this push's key
//     signed for that node and cluster (nothing an etcd writer puts can block it):
//     a higher signed serial, or the same serial with other content, refuses the push;
//     the same serial and content is `unchanged`;
//  5. store the declaration's bytes once by digest (in chunks when large: fleet/bodies.hh);
//  6. sign one statement and put it to the nodes in transactions of up to kEtcdMaxTxnOps
//     puts (and kPushTxnBytes), each conditional on every one of its nodes' keys being
//     as step 4 read them, on kPushStreams connections at once. When a batch's
//     transaction fails, its nodes are put one by one, each conditional on its own key,
//     so that the node whose value changed in between is named: a `Conflict`;
//  7. record the push (fleet/push_history.hh) and drop the bodies no statement names.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fleet/etcd.hh"
#include "fleet/protocol.hh"
#include "fleet/push_history.hh"
#include "fleet/statement.hh"
#include "trust/operator_key.hh"

namespace mesh::fleet {

// How many transactions of one push are in flight at once, each on its own connection:
// etcd syncs its log to disk once for the transactions that arrive together, so a push
// to 1,000 nodes (8 transactions) costs about one disk sync, not eight.
inline constexpr std::size_t kPushStreams = 8;
// The most bytes of statements one transaction carries: with the keys and the
// request's framing, well under etcd's kEtcdMaxRequestBytes.
inline constexpr std::size_t kPushTxnBytes = 1024 * 1024;

// One node's own declaration (`fleet push --each DIR`: DIR/<node>.toml).
struct NodeDeclaration {
  std::string node;
  std::string path;  // names it in messages
  std::string text;  // its exact bytes
};

struct PushRequest {
  std::string cluster{kDefaultCluster};
  Selector selector;            // as given: names and globs
  std::string declarationPath;  // names the declaration in messages
  std::string text;             // its exact bytes
  // --each (fleet/push_each.hh): each node its own text, in place of selector and text.
  // One push all the same: one lock, one serial (every text's), one signed statement per
  // distinct text (its selector the nodes that get it), one record.
  std::vector<NodeDeclaration> each;
  int64_t maxParallelRestarts = 0;
  std::chrono::milliseconds lockTimeout{std::chrono::seconds(30)};
  // A wave (or the revert) of a rollout (fleet/rollout.hh): not refused while it runs.
  bool inRollout = false;
};

struct PushedNode {
  enum class Result { Pushed, Unchanged, Conflict };
  enum class Outcome { Waiting, Applied, Failed, Refused, TimedOut };

  std::string node;
  Result result = Result::Pushed;
  int64_t revision = 0;  // of the put, or of the identical value already there; 0 conflict
  std::string value;     // valueDigest() of the value the node judges ("" conflict)
  std::string digest;    // the declaration's this node was pushed, "sha256:…"
  Outcome outcome = Outcome::Waiting;  // waitForNodes()
  std::string detail;
};

struct PushReport {
  // The declaration's, "sha256:…"; for --each, eachDigest() of what each node got.
  std::string digest;
  int64_t texts = 0;  // --each: how many distinct texts; 0 for one text to every node
  int64_t serial = 0;
  std::string pushedBy;
  std::vector<PushedNode> nodes;  // sorted by name; conflicts included
  std::string selector;           // Selector::text() as signed
  int64_t pushedAtMs = 0;         // as signed
  // The push's record (fleet/push_history.hh) and the revision it was put at.
  std::string recordKey;
  int64_t recordRevision = 0;
};

struct PushEvents {
  std::function<void(const std::string&)> warn;     // a line for stderr
  std::function<void(const PushedNode&)> progress;  // each node once it is decided
  // After every check, just before the first statement is put (tests change a node's
  // key here, as a writer outside fleet push would, to make a conflict).
  std::function<void()> beforePuts;
};

// What a push of one text per node names as its digest: the digest of the lines
// "<node> <declaration digest>\n", sorted by node.
std::string eachDigest(const std::vector<PushedNode>& nodes);

// Throws InputError (nothing pushed) for bad input or a refused serial, Error when
// etcd fails or the push lock stays taken past lockTimeout (nothing pushed either).
PushReport push(EtcdClient& etcd, const trust::OperatorKey& key, const PushRequest& request,
                const PushEvents& events);

// Waits, through a watch on the nodes prefix, until every pushed or unchanged node's
// status carries the pushed digest and serial (Applied, or Failed when its last cycle
// failed) or a refusal of the very value it holds (Refused), or `limit` passes
// (TimedOut). Conflicts are left alone. A status counts only when it verifies against
// the node's enrollment signed by one of `trusted` (fleet/enroll.hh): a forged or
// unenrolled status never makes a push "applied".
void waitForNodes(EtcdClient& etcd, const FleetKeys& keys, PushReport& report,
                  std::chrono::milliseconds limit,
                  const std::vector<trust::OperatorPublicKey>& trusted);

// The push's record as its report says (with outcome counts once `waited`).
PushRecord recordOf(const PushReport& report, bool waited);
// After waitForNodes: adds the outcome counts to the push's record, signed with `key`.
// Returns false when the record has gone meanwhile (trimmed by newer pushes).
bool recordOutcomes(EtcdClient& etcd, const trust::OperatorKey& key, PushReport& report);

const char* resultName(PushedNode::Result r);    // "pushed", "unchanged", "conflict"
const char* outcomeName(PushedNode::Outcome o);  // "applied", … "timed out"

}  // namespace mesh::fleet
