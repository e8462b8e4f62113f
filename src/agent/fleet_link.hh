// The agent's link to etcd in fleet mode (`mesh-host run --etcd URL --node NAME`).
//
// Two threads, each with its own connection:
// - the watcher reads /mesh/<cluster>/nodes/<node>/declaration, then watches it
//   from the next revision. Every new revision is checked — the envelope, the
//   operator's signature over the exact text, the serial (no replay), the TOML —
//   and either handed to the agent (which cycles at once) or refused, the refusal
//   shown in the node's status. When etcd cannot be reached it retries with
//   backoff and resumes its watch after the last revision it saw; a compacted
//   revision makes it read the key again.
// - the heartbeat keeps the node's lease alive (TTL kHeartbeatTtl, 15 s, whatever
//   the interval) with a keep-alive when the agent's event loop asks it to (beat(),
//   every 5 s) — no etcd write. It writes only when there is news: on a new lease a
//   signed heartbeat naming it (.../heartbeat, on the lease), and the node's status,
//   signed with the node key, on the lease with its copy without a lease at .../seen,
//   whenever the status changed materially (fleet::sameMaterially) — an idle node
//   writes nothing. A dead node's status and heartbeat disappear with its lease; a
//   node that stops on SIGTERM revokes its lease at once; a hung event loop stops
//   the keep-alives.
// Nothing here blocks a cycle: while etcd is away the node keeps converging to the
// last declaration it accepted (cached in the state store).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/log.hh"
#include "apply/restart_permit.hh"
#include "decl/model.hh"
#include "fleet/etcd.hh"
#include "fleet/protocol.hh"
#include "fleet/report.hh"
#include "fleet/statement.hh"
#include "trust/node_key.hh"
#include "trust/operator_key.hh"

namespace mesh::fleet {
class RestartSlots;
}  // namespace mesh::fleet

namespace mesh::agent {

class ReportPublisher;  // agent/node_report.hh

struct FleetOptions {
  std::string endpoint;  // http://host:port
  // TLS files and user for a secured etcd (its endpoint is ignored: `endpoint` is it).
  fleet::EtcdConfig connection;
  std::string cluster{fleet::kDefaultCluster};
  std::string node;
  std::string version;  // mesh-host's, published in the status
  std::chrono::milliseconds interval{std::chrono::minutes(5)};
  // Whose signatures this node accepts; fleet mode requires at least one key.
  std::vector<trust::OperatorPublicKey> trusted;
  // Parses and validates a pushed declaration's text as `apply` would a file
  // (node name, users, groups); throws InputError to refuse it.
  std::function<decl::Declaration(const std::string& text, const std::string& source)> parse;
  // Backoff between attempts while etcd is unreachable.
  std::chrono::milliseconds backoffMin{std::chrono::milliseconds(100)};
  // At most 2 s: a node converges within about 5 s of a majority of etcd being back.
  std::chrono::milliseconds backoffMax{std::chrono::seconds(2)};
};

// A pushed declaration this node accepted, and where it came from.
struct AcceptedDeclaration {
  decl::Declaration declaration;
  std::string envelope;             // the etcd value, with the declaration's bytes inline
  int64_t revision = 0;             // its mod revision
  int64_t maxParallelRestarts = 0;  // the signed statement's
  fleet::Statement statement;       // what the operator signed (fleet/statement.hh)
};

// Its parts: fleet_link.cc (life, what the threads share), fleet_link_judge.cc (a
// pushed value accepted or refused), fleet_link_watch.cc, fleet_link_heartbeat.cc (the
// two threads), fleet_link_slots.cc (restart slots).
class FleetLink {
 public:
  // `wake` is called (from the watcher thread) when takeAccepted() has news.
  FleetLink(FleetOptions options, std::string stateDir, Logger& log, std::function<void()> wake);
  ~FleetLink();  // stop()
  FleetLink(const FleetLink&) = delete;
  FleetLink& operator=(const FleetLink&) = delete;

  const std::string& declarationKey() const { return declarationKey_; }

  // The pushed declaration cached in the state store, checked again as if it had
  // just arrived; nullopt when there is none or it no longer passes (logged).
  std::optional<AcceptedDeclaration> loadCached();

  // Starts both threads; the watcher resumes after `resumeAfter` (0: reads first).
  void start(int64_t resumeAfter);
  // Ends both threads (within about a second) and revokes the lease.
  void stop();

  // The newest declaration accepted since the last call, if any.
  std::optional<AcceptedDeclaration> takeAccepted();

  // Publishes the node's status (node, cluster, version, pid, interval and any
  // refusal are filled in here); returns at once, the heartbeat puts it when it
  // changed materially.
  void publish(fleet::NodeStatus status);

  // The services as the agent last looked at them (agent/service_watch.hh): put when they
  // changed, except while a cycle runs (holdServices()): then they wait for the cycle's
  // status, which carries them (publish() always carries the latest), so that a status
  // never shows what a cycle restarted beside the counts and applied cycle of before it.
  void setServices(std::vector<fleet::NodeStatus::Service> services);
  void holdServices();
  void releaseServices();
  // Puts the node report of a cycle (fleet/report.hh) on a thread of its own
  // (fleet_link_report.cc); returns at once.
  void publishReport(fleet::NodeReport report);

  // From the agent's event loop, every fleet::kHeartbeatPeriod: renew the lease (on
  // the heartbeat thread; returns at once).
  void beat();
  // Once the watch is established and a first status is published — or etcd could
  // not be reached at all, and the node runs on its cached declaration — what to tell
  // systemd with READY=1; nullopt before. The agent is woken (`wake`) when it changes.
  std::optional<std::string> readiness();
  // Frees restart slots an earlier agent of this node left (after a cycle: whatever it
  // restarted is back by then); logs what it freed, and errors as warnings.
  void releaseStaleSlots();
  // The node's public key, for the operator's `fleet enroll`.
  std::string publicKeyText() const { return nodeKey_.publicKeyText(); }

  // For the cycle's Context::holdRestartSlot: with `limit` > 0, a restart waits
  // for one of `limit` fleet-wide slots of its service (fleet/restart_slots.hh),
  // giving up after `timeout` or when `stop` is set; empty when limit is 0.
  apply::RestartGate restartGate(int64_t limit, std::chrono::milliseconds timeout,
                                 const std::atomic<bool>* stop);

 private:
  // What each of the link's etcd clients gives a call (fleet_link_watch.cc, _heartbeat.cc).
  static constexpr std::chrono::seconds kRequestTimeout{5};

  void watchLoop(int64_t resumeAfter);
  void heartbeatLoop();
  // Runs a thread's loop; anything it throws is logged, never std::terminate.
  void guardedThread(const char* what, const std::function<void()>& loop);
  // A value seen at `revision`: accepted (handed to the agent) or refused.
  void consider(const std::string& value, int64_t revision);
  AcceptedDeclaration check(const std::string& value, int64_t revision);
  void refuse(int64_t revision, const std::string& value, const std::string& reason);
  // Waits up to `d` unless stopping; false when stopping.
  bool pause(std::chrono::milliseconds d);

  fleet::EtcdConfig etcdConfig() const;
  // The watcher or the heartbeat reached a point readiness() waits for.
  void noteLinked(bool watching, bool published, const std::string& unreachable);

  FleetOptions o_;
  std::string stateDir_;
  trust::NodeKey nodeKey_;
  Logger& log_;
  std::function<void()> wake_;
  fleet::FleetKeys keys_;
  std::string declarationKey_;
  std::chrono::seconds ttl_;

  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  std::atomic<bool> cancel_{false};  // ends a quiet watch
  std::optional<AcceptedDeclaration> pending_;
  std::optional<int64_t> appliedSerial_;  // the highest applied when the agent started
  fleet::NodeStatus status_;
  std::vector<fleet::NodeStatus::Service> services_;
  bool servicesHeld_ = false;
  bool statusDirty_ = false;
  uint64_t statusVersion_ = 0;  // bumped by each change to status_
  std::optional<fleet::NodeStatus::Refusal> refusal_;

  // Convergence by content (docs/fleet.md): what is in force and what was judged last
  // are named by content, never by etcd revision — a wiped or replaced etcd starts its
  // revisions again.
  struct InForce {
    fleet::Statement statement;
    std::string value;  // fleet::valueDigest() of the etcd value
  };
  std::optional<InForce> inForce_;
  std::string lastJudged_;     // valueDigest() of the last value accepted or refused
  std::string appliedDigest_;  // of the generation with appliedSerial_, "" unknown
  bool republish_ = false;     // etcd changed identity: publish on a new lease at once
  bool rewrite_ = false;       // the status or heartbeat was deleted: put both again
  std::string appliedKey_;     // digest and serial of appliedCycle_
  std::optional<fleet::NodeStatus::AppliedCycle> appliedCycle_;
  // An etcd that is another cluster now, or went back: read again, publish again.
  void etcdChanged(const std::string& why);
  // The node's status or heartbeat was deleted by someone else: publish both again.
  void publishAgain();
  // Fills status.appliedCycle (under mutex_).
  void noteAppliedCycle(fleet::NodeStatus& status);
  bool beatWanted_ = false;  // the event loop asked for a heartbeat
  bool watching_ = false, published_ = false;
  std::string unreachable_;  // the first etcd error before the link was up
  std::optional<std::string> readiness_;

  std::unique_ptr<fleet::EtcdClient> slotsEtcd_;
  std::unique_ptr<fleet::RestartSlots> slots_;
  std::thread watcher_, heartbeat_;
  std::mutex reportsMutex_;
  std::unique_ptr<ReportPublisher> reports_;  // made by the first publishReport
};

}  // namespace mesh::agent
