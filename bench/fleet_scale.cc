// Fleet at scale: one real etcd (started here, tests/etcd/etcd.sh), N simulated nodes and
// A real agents, driven with the real `mesh-host fleet push` and `fleet status`.
//
// The simulated nodes live in this process. Each has its own node key, enrolled as
// `fleet enroll` does (an operator-signed record); they share one etcd lease per
// --per-lease nodes (renewed with keep-alives) and publish as an agent does: a signed
// heartbeat naming the lease and a signed status (on the lease) with its seen copy. One
// watch over the nodes prefix brings every pushed statement; per node it is verified
// (the operator's signature, cluster, selector, serial), the body fetched once per digest
// (cached), "applied" in memory, and a new signed status put by a pool of publishers
// (each with its own connection, as nodes have). The real agents are `mesh-host run
// --etcd` processes (own --root and --state-dir, builtin supervisor, a short --interval).
//
// It reports, per round (a `fleet push` of a new serial to every node):
//   - push to all applied, p50/p99/max: per node, from the start of the push command to
//     its status carrying the pushed digest and serial in etcd — for a real agent, seen on
//     a watch of the agents' keys; for a simulated node, when the transaction that put it
//     was committed (statuses go out in transactions of 64 nodes);
//   - the push command's own time, and etcd's database growth over the round (dbSize of
//     /v3/maintenance/status: the statement puts, the body, the statuses they cause);
// then `fleet status` wall time (the median of --status-runs runs) and the writes per
// second at idle: etcd's revision delta over --idle seconds while the real agents cycle.
//
//   build/bench/mesh_bench_fleet_scale [--nodes 10000] [--agents 100] [--rounds 3]
//       [--idle 30] [--status-runs 5] [--per-lease 1000] [--publishers 32]
//       [--agent-interval 2s] [--keep] [--hold] [--up-within 120]
//       [--etcd-cluster [--kill-leader R [--kill-after 100]]]
//
// --etcd-cluster: a three-member cluster on loopback (etcd.sh cluster-start) instead of
// one etcd; every client gets the three URLs (agents spread over them by name, the
// simulated nodes and the commands start at the first). --kill-leader R: in round R the
// member that leads is SIGKILLed --kill-after ms after `fleet push` started (the push
// and every node ride it out on the other two; the later rounds run on two members).
//
// --hold: after the report, etcd, the agents and the simulated nodes (their leases kept)
// stay up until stdin ends, for timing or profiling `fleet status` against a live fleet
// (the command to run it is printed). --keep: the bench's directory is not removed.
//
// bench/fleet_scale.sh builds it and runs it at 1,000 and 10,000 nodes.
#include <fcntl.h>
#include <signal.h>
#include <sodium.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fleet/enroll.hh"
#include "fleet/etcd.hh"
#include "fleet/node_signed.hh"
#include "fleet/protocol.hh"
#include "fleet/statement.hh"
#include "trust/node_key.hh"
#include "trust/operator_key.hh"
#include "util/digest.hh"

#include "bench_util.hh"

namespace {

using namespace mesh::bench;  // bench_util.hh

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using namespace mesh;
using namespace mesh::fleet;

struct Options {
  int nodes = 10000;
  int agents = 100;
  int rounds = 3;
  int idleSeconds = 30;
  int statusRuns = 5;
  int perLease = 1000;
  int publishers = 32;
  std::string agentInterval = "2s";
  bool keep = false;
  bool hold = false;
  bool etcdCluster = false;  // --etcd-cluster: three members (etcd.sh cluster-start)
  int killLeaderRound = 0;   // --kill-leader R: the leader SIGKILLed during round R's push
  int killAfterMs = 100;     // --kill-after MS: that long after the push command started
  int upWithin = 120;        // --up-within S: every node up (a status published) within S seconds
};

int64_t unixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The last line a shell command prints.
// etcd's database size in bytes (/v3/maintenance/status through the gateway).
int64_t dbSize(const std::string& url) {
  const std::string out =
      shellOut(fmt::format("curl -s -X POST -d '{{}}' {}/v3/maintenance/status", url));
  const auto j = nlohmann::json::parse(out, nullptr, false);
  if (!j.is_object() || !j.contains("dbSize")) throw std::runtime_error("etcd status: " + out);
  const auto& v = j["dbSize"];
  return v.is_string() ? std::stoll(v.get<std::string>()) : v.get<int64_t>();
}

// The simulated nodes: keys, what each applied, and the agents' side of the protocol.
class SimulatedNodes {
 public:
  SimulatedNodes(const std::string& url, const FleetKeys& keys, const Options& o,
                 const trust::OperatorKey& op)
      : url_(url), keys_(keys), o_(o), trusted_{op.publicKey()} {
    for (int i = 0; i < o.nodes; ++i) {
      Node n{fmt::format("s-{:05}", i), trust::NodeKey::ephemeral(), {}, 0};
      n.status.node = n.name;
      n.status.cluster = keys.cluster;
      n.status.version = "bench";
      n.status.pid = 100000 + i;
      n.status.intervalMs = 300000;
      nodes_.push_back(std::move(n));
      index_[nodes_.back().name] = i;
    }
    published_.assign(nodes_.size(), {0, Clock::time_point()});
  }
  ~SimulatedNodes() { stop(); }

  // Enrolls every node (as `fleet enroll`), takes the leases and publishes every node's
  // heartbeat and first status, in parallel.
  void start(const trust::OperatorKey& op) {
    EtcdClient etcd(url_);
    for (int i = 0; i < o_.nodes; i += o_.perLease) leases_.push_back(etcd.grantLease(15));
    for (size_t i = 0; i < nodes_.size(); ++i) nodes_[i].lease = leases_[i / o_.perLease];
    running_ = true;
    keepAlive_ = std::thread([this] { keepAliveLoop(); });
    parallel([&](EtcdClient& c, size_t i) {
      Node& n = nodes_[i];
      c.put(enrollmentKey(keys_, n.name),
            encodeEnrollment(keys_.cluster, n.name, n.key.publicKey(), unixMs(), op));
      const Heartbeat h{n.name, keys_.cluster, n.status.pid, unixMs(), n.lease};
      c.put(heartbeatKey(keys_, n.name), signNodeJson(encodeHeartbeat(h), n.key), n.lease);
      publish(c, n);
    });
    for (int i = 0; i < o_.publishers; ++i) workers_.emplace_back([this] { workLoop(); });
    const int64_t from = etcd.getPrefix(keys_.nodesPrefix() + "~").revision + 1;
    watcher_ = std::thread([this, from] { watchLoop(from); });
  }

  void stop() {
    if (!running_.exchange(false)) return;
    cancel_ = true;
    queueChanged_.notify_all();
    if (watcher_.joinable()) watcher_.join();
    for (auto& w : workers_) w.join();
    if (keepAlive_.joinable()) keepAlive_.join();
  }

  // Until every simulated node's status of `serial` is committed in etcd (or `deadline`):
  // per node, ms from t0.
  std::map<std::string, double> awaitPublished(int64_t serial, Clock::time_point t0,
                                               Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto all = [&] {
      return std::all_of(published_.begin(), published_.end(),
                         [&](const auto& p) { return p.first >= serial; });
    };
    publishedChanged_.wait_until(lock, deadline, all);
    std::map<std::string, double> at;
    for (size_t i = 0; i < published_.size(); ++i)
      if (published_[i].first >= serial)
        at[nodes_[i].name] =
            std::chrono::duration<double, std::milli>(published_[i].second - t0).count();
    return at;
  }

  // What went wrong on the nodes' side (refusals, lost keep-alives), for a failed round.
  std::string refusals() {
    std::lock_guard<std::mutex> g(mutex_);
    return refusals_;
  }

 private:
  struct Node {
    std::string name;
    trust::NodeKey key;
    NodeStatus status;
    int64_t lease;
  };
  struct Work {
    size_t node;
    std::string value;
    int64_t revision;
  };

  // Runs f for every node over o_.publishers threads, each with its own connection.
  void parallel(const std::function<void(EtcdClient&, size_t)>& f) {
    std::atomic<size_t> next{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < o_.publishers; ++t)
      threads.emplace_back([&] {
        EtcdClient c(url_, 30s);
        for (size_t i; (i = next++) < nodes_.size();) f(c, i);
      });
    for (auto& t : threads) t.join();
  }

  // A node's signed status, as the agent puts it: on its lease, with its seen copy.
  std::vector<EtcdOp> statusOps(Node& n) {
    n.status.publishedAtMs = unixMs();
    n.status.lease = n.lease;
    const std::string text = signNodeJson(encodeStatus(n.status), n.key);
    return {EtcdOp::put(keys_.status(n.name), text, n.lease),
            EtcdOp::put(keys_.seen(n.name), text)};
  }

  void publish(EtcdClient& c, Node& n) { c.txn({}, statusOps(n)); }

  void keepAliveLoop() {
    EtcdClient c(url_);
    while (running_) {
      try {
        for (int64_t lease : leases_)
          if (c.keepAliveOnce(lease) == 0) note("lease expired: the bench is too slow to renew it");
      } catch (const std::exception& e) {
        note(std::string("keep-alive: ") + e.what());
      }
      std::unique_lock<std::mutex> lock(mutex_);
      queueChanged_.wait_for(lock, kHeartbeatPeriod, [this] { return !running_; });
    }
  }

  void watchLoop(int64_t from) {
    EtcdClient c(url_);
    while (!cancel_) try {
        c.watch(
            keys_.nodesPrefix(), from,
            [&](const std::vector<EtcdEvent>& events) {
              std::lock_guard<std::mutex> g(mutex_);
              for (const auto& e : events) {
                from = std::max(from, e.kv.modRevision + 1);
                const auto split = keys_.splitNodeKey(e.kv.key);
                if (e.type != EtcdEvent::Type::Put || !split || split->second != "declaration")
                  continue;
                const auto it = index_.find(split->first);
                if (it == index_.end()) continue;  // a real agent's
                queue_.push_back({it->second, e.kv.value, e.kv.modRevision});
              }
              queueChanged_.notify_all();
              return !cancel_.load();
            },
            5min, EtcdClient::WatchScope::Prefix, &cancel_);
      } catch (const std::exception& e) {
        note(std::string("watch: ") + e.what());
        std::this_thread::sleep_for(100ms);
      }
  }

  void note(const std::string& what) {
    std::lock_guard<std::mutex> g(mutex_);
    if (refusals_.size() < 4096) refusals_ += what + "\n";
  }

  // Statuses go out in transactions of up to kPublishBatch nodes (status and seen copy
  // each): this one process stands for 10,000 nodes, each of which would put its own on
  // its own connection; one put per node here would measure this process's round trips
  // to etcd, not the push. Every node still verifies what it applies and signs its status.
  static constexpr size_t kPublishBatch = kEtcdMaxTxnOps / 2;

  void workLoop() {
    EtcdClient c(url_, 30s);
    for (;;) {
      std::vector<Work> batch;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        queueChanged_.wait(lock, [this] { return !queue_.empty() || !running_; });
        if (queue_.empty()) return;
        while (!queue_.empty() && batch.size() < kPublishBatch) {
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
      }
      std::vector<EtcdOp> ops;
      std::vector<std::string> names;
      std::vector<size_t> applied;
      for (const auto& w : batch) {
        Node& n = nodes_[w.node];
        try {
          apply(c, n, w, ops);
          names.push_back(n.name);
          applied.push_back(w.node);
        } catch (const std::exception& e) {
          note(n.name + ": " + e.what());
        }
      }
      if (ops.empty()) continue;
      try {
        c.txn({}, ops);
        // Committed: from now on every reader of etcd reads these statuses.
        const auto now = Clock::now();
        std::lock_guard<std::mutex> g(mutex_);
        for (size_t i : applied) published_[i] = {*nodes_[i].status.serial, now};
        publishedChanged_.notify_all();
      } catch (const std::exception& e) {
        note(fmt::format("{}: {}", fmt::join(names, ", "), e.what()));
      }
    }
  }

  // What an agent does with a pushed value: verify, fetch the body by digest, apply,
  // sign its status (the puts go into `ops`).
  void apply(EtcdClient& c, Node& n, const Work& w, std::vector<EtcdOp>& ops) {
    const std::string where = keys_.declaration(n.name);
    auto pushed = decodePushed(w.value, where);
    const Statement st = verified(pushed, where);
    if (st.cluster != keys_.cluster || !st.selector.matches(n.name))
      throw std::runtime_error("not for this node or cluster");
    if (n.status.serial && st.serial <= *n.status.serial)
      throw std::runtime_error("a replay: serial not above the applied one");
    pushed.text = body(c, st.declarationDigest);
    if (Digest::ofBytes(pushed.text).str() != st.declarationDigest)
      throw std::runtime_error("the body does not have the signed digest");
    NodeStatus& s = n.status;
    s.generation += 1;
    s.serial = st.serial;
    s.declarationDigest = st.declarationDigest;
    s.revision = w.revision;
    s.cycle += 1;
    s.lastCycleAtMs = unixMs();
    s.trigger = fmt::format("etcd revision {}", w.revision);
    s.created = 0;
    s.updated = 1;
    s.unchanged = 11;
    s.appliedCycle = appliedCycleOf(s);
    for (auto& op : statusOps(n)) ops.push_back(std::move(op));
  }

  // The signed statement of a value, checked once per distinct value: each real node
  // checks its own on its own CPU; this one process stands for 10,000 of them on 2 cores.
  Statement verified(const PushedDeclaration& pushed, const std::string& where) {
    const std::string key = pushed.statement + '\n' + pushed.signature;
    {
      std::lock_guard<std::mutex> g(bodiesMutex_);
      if (auto it = statements_.find(key); it != statements_.end()) return it->second;
    }
    Statement st = verifySignedStatement(pushed, where, trusted_);
    std::lock_guard<std::mutex> g(bodiesMutex_);
    statements_.emplace(key, st);
    return st;
  }

  // A declaration's bytes, fetched once per digest.
  std::string body(EtcdClient& c, const std::string& digest) {
    std::shared_future<std::string> f;
    std::optional<std::promise<std::string>> mine;
    {
      std::lock_guard<std::mutex> g(bodiesMutex_);
      auto it = bodies_.find(digest);
      if (it == bodies_.end()) {
        mine.emplace();
        it = bodies_.emplace(digest, mine->get_future().share()).first;
      }
      f = it->second;
    }
    if (mine) {
      try {
        auto v = c.get(keys_.body(digest));
        if (!v) throw std::runtime_error("no body for " + digest);
        mine->set_value(v->value);
      } catch (...) {
        mine->set_exception(std::current_exception());
      }
    }
    return f.get();
  }

  const std::string url_;
  const FleetKeys keys_;
  const Options o_;
  const std::vector<trust::OperatorPublicKey> trusted_;
  std::vector<Node> nodes_;
  std::map<std::string, size_t> index_;
  std::vector<int64_t> leases_;

  std::mutex mutex_;
  std::condition_variable queueChanged_, publishedChanged_;
  // Per node: the serial of its newest status committed in etcd, and when.
  std::vector<std::pair<int64_t, Clock::time_point>> published_;
  std::deque<Work> queue_;
  std::string refusals_;
  std::atomic<bool> running_{false}, cancel_{false};
  std::thread watcher_, keepAlive_;
  std::vector<std::thread> workers_;

  std::mutex bodiesMutex_;
  std::map<std::string, Statement> statements_;  // by statement and signature
  std::map<std::string, std::shared_future<std::string>> bodies_;
};

// The real agents: stopped (SIGTERM: each revokes its lease) however the bench ends.
struct Agents {
  std::vector<pid_t> pids;
  ~Agents() { stop(); }
  void stop() {
    for (pid_t p : pids) ::kill(p, SIGTERM);
    for (pid_t p : pids) mesh::test::waitExit(p);
    pids.clear();
  }
};

struct Round {
  double p50, p99, max, pushMs;
  int64_t dbGrowth;
};

// Until `total` nodes under `prefix` have a status carrying `digest` and `serial` (or the
// time is up): per node, ms from t0. Watches from `from`.
std::map<std::string, double> awaitApplied(EtcdClient& etcd, const FleetKeys& keys,
                                           const std::string& prefix, int64_t from, size_t total,
                                           const std::string& digest, int64_t serial,
                                           Clock::time_point t0, std::chrono::seconds limit) {
  std::map<std::string, double> at;
  const auto deadline = Clock::now() + limit;
  while (at.size() < total && Clock::now() < deadline) try {
      etcd.watch(
          prefix, from,
          [&](const std::vector<EtcdEvent>& events) {
            const double ms = msSince(t0);
            for (const auto& e : events) {
              from = std::max(from, e.kv.modRevision + 1);
              const auto split = keys.splitNodeKey(e.kv.key);
              if (e.type != EtcdEvent::Type::Put || !split || split->second != "status" ||
                  at.count(split->first))
                continue;
              const auto s = decodeStatus(e.kv.value, e.kv.key);
              if (s.declarationDigest == digest && s.serial == serial) at[split->first] = ms;
            }
            return at.size() < total;
          },
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()) + 1ms,
          EtcdClient::WatchScope::Prefix);
    } catch (const EtcdMemberFailed&) {
      // Its member was killed (--kill-leader): the client moved; watch again from `from`.
    }
  return at;
}

int run(const Options& o, const std::string& dir) {
  const std::string etcdDir = dir + "/etcd";
  const std::string url =
      shellOut(fmt::format("ETCD_OWNER_PID={} {} {} {}", ::getpid(), MESH_ETCD_SCRIPT,
                           o.etcdCluster ? "cluster-start" : "start", etcdDir));
  if (url.rfind("http://", 0) != 0) throw std::runtime_error("etcd did not start: " + url);
  // The members alive (1..3; one: the single etcd), for what asks one member (dbSize).
  std::vector<std::string> members;
  for (size_t at = 0; at != std::string::npos;) {
    const size_t comma = url.find(',', at);
    members.push_back(url.substr(at, comma == std::string::npos ? comma : comma - at));
    at = comma == std::string::npos ? comma : comma + 1;
  }
  std::vector<bool> killed(members.size(), false);
  const auto liveMember = [&] {
    for (size_t i = 0; i < members.size(); ++i)
      if (!killed[i]) return members[i];
    return members[0];
  };
  const auto op = trust::OperatorKey::generate();
  const std::string keyFile = dir + "/ops.key";
  op.saveNew(keyFile);
  const std::string cluster = "scale";
  const FleetKeys keys{cluster};
  EtcdClient etcd(url, 60s);
  const size_t total = static_cast<size_t>(o.nodes + o.agents);

  std::printf("fleet scale: %d simulated nodes + %d real agents (--interval %s) on etcd %s\n",
              o.nodes, o.agents, o.agentInterval.c_str(), url.c_str());
  const auto t0 = Clock::now();
  SimulatedNodes sim(url, keys, o, op);
  sim.start(op);
  std::printf("  %d simulated nodes enrolled and published in %.1f s\n", o.nodes,
              msSince(t0) / 1000);

  Agents agents;
  for (int i = 0; i < o.agents; ++i) {
    const std::string name = fmt::format("a-{:03}", i), root = dir + "/" + name;
    const std::string stateDir = root + "/var/lib/mesh-host";
    fs::create_directories(root);
    const std::string key = shellOut(fmt::format("{} key init --root {} --state-dir {} | head -1",
                                                 MESH_HOST_BIN, root, stateDir));
    etcd.put(enrollmentKey(keys, name),
             encodeEnrollment(cluster, name, trust::NodePublicKey::parse(key, name), unixMs(), op));
    agents.pids.push_back(spawn({MESH_HOST_BIN,  "run",
                                 "--etcd",       url,
                                 "--cluster",    cluster,
                                 "--node",       name,
                                 "--root",       root,
                                 "--state-dir",  stateDir,
                                 "--trust",      op.publicKey().text(),
                                 "--interval",   o.agentInterval,
                                 "--splay",      "0",
                                 "--supervisor", "builtin"},
                                root + ".log"));
  }
  // Every node up (a status on its lease) before the first push.
  const auto upBy = Clock::now() + std::chrono::seconds(o.upWithin);
  for (;;) {
    size_t up = 0;
    for (const auto& [node, k] : nodesIn(etcd.getPrefix(keys.nodesPrefix()), keys))
      up += k.status.has_value();
    if (up >= total) break;
    if (Clock::now() > upBy)
      throw std::runtime_error(
          fmt::format("only {} of {} nodes up after {} s (--up-within)", up, total, o.upWithin));
    std::this_thread::sleep_for(200ms);
  }
  std::printf("  all %zu nodes up after %.1f s\n", total, msSince(t0) / 1000);

  std::vector<Round> rounds;
  for (int r = 1; r <= o.rounds; ++r) {
    const std::string decl = fmt::format("{}/decl-{}.toml", dir, r);
    const std::string text = fmt::format(
        "serial = {}\n\n[module.bench.file.motd]\npath = \"/etc/motd\"\ncontent = \"round {}\"\n",
        r, r);
    std::ofstream(decl) << text;
    const std::string digest = "sha256:" + shellOut("sha256sum " + decl + " | cut -d' ' -f1");
    const int64_t dbBefore = dbSize(liveMember());
    const int64_t from = etcd.getPrefix(keys.nodesPrefix() + "~").revision + 1;
    // The leader to kill in this round, found before the push starts.
    const bool killing = r == o.killLeaderRound && o.etcdCluster;
    const std::string leader =
        killing ? shellOut(fmt::format("{} leader {}", MESH_ETCD_SCRIPT, etcdDir)) : "";
    const auto start = Clock::now();
    const pid_t push = spawn({MESH_HOST_BIN, "fleet", "push", "--etcd", url, "--cluster", cluster,
                              "--key", keyFile, "--nodes", "*", decl},
                             dir + "/push.log");
    double pushMs = 0;
    if (killing) {
      std::this_thread::sleep_for(std::chrono::milliseconds(o.killAfterMs));
      shellOut(fmt::format("{} member-kill {} {}", MESH_ETCD_SCRIPT, etcdDir, leader));
      killed[static_cast<size_t>(std::stoi(leader) - 1)] = true;
      std::printf("  round %d: killed member %s (the leader) %.0f ms after the push started\n", r,
                  leader.c_str(), msSince(start));
    }
    std::thread pushWaiter([&] {
      const int rc = mesh::test::waitExit(push);
      pushMs = msSince(start);
      if (rc != 0)
        std::fprintf(stderr, "round %d: fleet push exited %d (see %s/push.log)\n", r, rc,
                     dir.c_str());
    });
    // The real agents' statuses, on a watch of their keys alone (a-*); the simulated
    // nodes' from the commit of the transaction that put them: a second watch over every
    // node's keys would double etcd's work for each status and statement (10,000 real
    // nodes each watch their own key), and measure this bench rather than the push.
    std::map<std::string, double> agentsAt;
    std::thread agentWatch([&] {
      EtcdClient w(url, 60s);
      agentsAt = awaitApplied(w, keys, keys.nodesPrefix() + "a-", from,
                              static_cast<size_t>(o.agents), digest, r, start, 300s);
    });
    auto at = sim.awaitPublished(r, start, Clock::now() + 300s);
    agentWatch.join();
    at.merge(agentsAt);
    pushWaiter.join();
    if (at.size() < total)
      throw std::runtime_error(
          fmt::format("round {}: only {} of {} nodes applied within 300 s; refusals:\n{}", r,
                      at.size(), total, sim.refusals()));
    std::vector<double> v;
    for (const auto& [node, ms] : at) v.push_back(ms);
    rounds.push_back({percentile(v, 0.5), percentile(v, 0.99),
                      *std::max_element(v.begin(), v.end()), pushMs,
                      dbSize(liveMember()) - dbBefore});
    const auto& x = rounds.back();
    std::printf(
        "  round %d: applied p50 %.0f ms, p99 %.0f ms, max %.0f ms; push command %.0f ms; "
        "etcd db +%.1f MB\n",
        r, x.p50, x.p99, x.max, x.pushMs, static_cast<double>(x.dbGrowth) / 1e6);
    std::fflush(stdout);
  }

  // `fleet status`, the real binary, at this size.
  // Its memo of what it verified (docs/fleet.md) in the bench's directory: the first run
  // verifies everything, the later ones only what changed since (nothing, here).
  ::setenv("XDG_CACHE_HOME", (dir + "/cache").c_str(), 1);
  std::vector<double> statusMs;
  int statusCode = -1;
  for (int i = 0; i < o.statusRuns; ++i) {
    const auto s0 = Clock::now();
    statusCode =
        mesh::test::waitExit(spawn({MESH_HOST_BIN, "fleet", "status", "--etcd", url, "--cluster",
                                    cluster, "--trust", op.publicKey().text(), "--json"},
                                   dir + "/status.json"));
    statusMs.push_back(msSince(s0));
  }
  std::printf(
      "  fleet status: exit %d (0: all %zu converged), runs %s ms (the first with nothing "
      "remembered)\n",
      statusCode, total, fmt::format("{:.0f}", fmt::join(statusMs, ", ")).c_str());

  // Idle: the agents cycle (a short --interval), the simulated nodes keep their leases.
  // The first cycles after the last push change the agents' counts: let them pass.
  std::this_thread::sleep_for(3 * std::chrono::seconds(std::stoi(o.agentInterval)));
  const int64_t idleFrom = etcd.getPrefix(keys.nodesPrefix() + "~").revision;
  const auto i0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(o.idleSeconds));
  const int64_t idleTo = etcd.getPrefix(keys.nodesPrefix() + "~").revision;
  const double idleRate = static_cast<double>(idleTo - idleFrom) / (msSince(i0) / 1000);

  if (o.hold) {
    std::printf(
        "  holding until stdin ends: XDG_CACHE_HOME=%s/cache %s fleet status --etcd %s "
        "--cluster %s --trust %s --json\n",
        dir.c_str(), MESH_HOST_BIN, url.c_str(), cluster.c_str(), op.publicKey().text().c_str());
    std::fflush(stdout);
    char buf[256];
    while (::read(0, buf, sizeof buf) > 0) {
    }
  }
  agents.stop();
  sim.stop();
  shellOut(
      fmt::format("{} {} {}", MESH_ETCD_SCRIPT, o.etcdCluster ? "cluster-stop" : "stop", etcdDir));

  std::vector<double> p50, p99, mx, pushes, growth;
  for (const auto& x : rounds) {
    p50.push_back(x.p50);
    p99.push_back(x.p99);
    mx.push_back(x.max);
    pushes.push_back(x.pushMs);
    growth.push_back(static_cast<double>(x.dbGrowth) / 1e6);
  }
  std::printf(
      "\n| nodes | push→all applied p50 / p99 / max | push command | fleet status | "
      "etcd db per push | idle writes/s |\n");
  std::printf(
      "| ----- | -------------------------------- | ------------ | ------------ | "
      "---------------- | ------------- |\n");
  std::printf("| %5zu | %6.0f / %6.0f / %6.0f ms | %9.0f ms | %9.0f ms | %11.1f MB | %13.2f |\n",
              total, percentile(p50, 0.5), percentile(p99, 0.5), percentile(mx, 0.5),
              percentile(pushes, 0.5), percentile(statusMs, 0.5), percentile(growth, 0.5),
              idleRate);
  std::printf("(medians over %d rounds and %d status runs; idle over %d s: revision %lld → %lld)\n",
              o.rounds, o.statusRuns, o.idleSeconds, static_cast<long long>(idleFrom),
              static_cast<long long>(idleTo));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (sodium_init() < 0) return 1;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines as they come, also into a file
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    try {
      if (a == "--nodes")
        o.nodes = std::stoi(value());
      else if (a == "--agents")
        o.agents = std::stoi(value());
      else if (a == "--rounds")
        o.rounds = std::stoi(value());
      else if (a == "--idle")
        o.idleSeconds = std::stoi(value());
      else if (a == "--status-runs")
        o.statusRuns = std::stoi(value());
      else if (a == "--per-lease")
        o.perLease = std::stoi(value());
      else if (a == "--publishers")
        o.publishers = std::stoi(value());
      else if (a == "--agent-interval")
        o.agentInterval = value();
      else if (a == "--keep")
        o.keep = true;
      else if (a == "--hold")
        o.hold = true;
      else if (a == "--etcd-cluster")
        o.etcdCluster = true;
      else if (a == "--kill-leader")
        o.killLeaderRound = std::stoi(value());
      else if (a == "--kill-after")
        o.killAfterMs = std::stoi(value());
      else if (a == "--up-within")
        o.upWithin = std::stoi(value());
      else
        throw std::invalid_argument(a);
    } catch (const std::exception&) {
      std::fprintf(stderr,
                   "usage: %s [--nodes 10000] [--agents 100] [--rounds 3] [--idle 30] "
                   "[--status-runs 5] [--per-lease 1000] [--publishers 32] "
                   "[--agent-interval 2s] [--keep] [--hold] [--etcd-cluster [--kill-leader R "
                   "[--kill-after 100]]] [--up-within 120]\n",
                   argv[0]);
      return 2;
    }
  }
  if (o.perLease < 1 || o.publishers < 1 || o.rounds < 1 || o.statusRuns < 1) {
    std::fprintf(stderr, "%s: --per-lease, --publishers, --rounds, --status-runs must be > 0\n",
                 argv[0]);
    return 2;
  }
  // Every agent holds two inotify instances (its declaration and its drift watch),
  // all of them as root here, so the per-user limit (128 by default) stops the 65th
  // agent, which on a real fleet (one agent a machine) never binds. Say so first.
  if (std::ifstream in("/proc/sys/fs/inotify/max_user_instances"); in) {
    long limit = 0;
    if (in >> limit && limit < 3L * o.agents + 16) {
      std::fprintf(stderr,
                   "%s: %d agents need about %d inotify instances (two each, all as root); "
                   "fs.inotify.max_user_instances "
                   "is %ld: raise it (sysctl -w fs.inotify.max_user_instances=%d) or run fewer "
                   "--agents\n",
                   argv[0], o.agents, 3 * o.agents + 16, limit, 3 * o.agents + 16);
      return 2;
    }
  }
  char tmpl[] = "/tmp/mesh-bench-scale.XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  int rc = 0;
  try {
    rc = run(o, dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mesh_bench_fleet_scale: %s (files in %s)\n", e.what(), dir.c_str());
    rc = 1;
  }
  if (!o.keep && rc == 0) fs::remove_all(dir);
  return rc;
}
