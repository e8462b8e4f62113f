// A mesh of real nodes through a real etcd: each node is a `mesh-host run --etcd`
// process with its own --root and --state-dir (builtin supervisor), the operator
// uses `mesh-host fleet push` and `fleet status`. Waiting is on etcd watches of
// the nodes' status keys, or on the nodes' own logs, never on a fixed sleep.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "../support/child.hh"
#include "../support/fifo_feeder.hh"
#include "../support/raw_bytes.hh"
#include "await_file.hh"
#include "await_status.hh"
#include "fleet/node_signed.hh"
#include "fleet_fixture.hh"
#include "node_decls.hh"
#include "test_etcd.hh"
#include "trust/signing.hh"
#include "util/digest.hh"

namespace mesh::fleet::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct NodeProcess {
  std::string name, root, stateDir, log;
  pid_t pid = -1;
};

class Nodes : public FleetTest {
 protected:
  void SetUp() override {
    FleetTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    blobs = work + "/blobs";
    fs::create_directories(blobs);
    shared = work + "/shared.log";
  }

  void TearDown() override {
    for (auto& [name, n] : nodes) stopNode(name, SIGTERM);
    if (!ownEtcdDir.empty()) {
      runCommand({::mesh::test::etcdScript(), "stop", ownEtcdDir});
      fs::remove_all(fs::path(ownEtcdDir).parent_path());
    }
    // Services and their supervisors outlive their agents on purpose:
    // FleetTest::TearDown ends them (a service through the session its
    // supervisor leads, so that none is left orphaned).
    FleetTest::TearDown();
  }

  NodeProcess& startNode(const std::string& name, const std::vector<std::string>& env = {}) {
    NodeProcess n;
    n.name = name;
    n.root = work + "/" + name;
    n.stateDir = n.root + "/var/lib/mesh-host";
    n.log = work + "/" + name + ".log";
    fs::create_directories(n.root);
    enrollNode(n);
    const std::string nodeCluster = clusterOf.count(name) ? clusterOf.at(name) : cluster;
    const std::vector<std::string> argv = {MESH_HOST_BIN,  "run",
                                           "--etcd",       url,
                                           "--cluster",    nodeCluster,
                                           "--node",       name,
                                           "--root",       n.root,
                                           "--state-dir",  n.stateDir,
                                           "--trust",      operatorKey.text(),
                                           "--interval",   nodeInterval,
                                           "--splay",      "0",
                                           "--supervisor", "builtin",
                                           "--blobs",      blobs};
    n.pid = ::mesh::test::spawnChild(argv, n.log, "", ::mesh::test::Output::Append, env);
    return nodes[name] = n;
  }

  // Makes the node's key as its operator would (`key init` on the node, once) and
  // enrolls what it prints with `fleet enroll`.
  void enrollNode(const NodeProcess& n, bool again = false) {
    if (!again && fs::exists(n.stateDir + "/node.key")) return;
    Result init = runCommand({MESH_HOST_BIN, "key", again ? "show" : "init", "--root", n.root,
                              "--state-dir", n.stateDir});
    ASSERT_EQ(init.code, 0) << init.err;
    std::string key = init.out.substr(0, init.out.find('\n'));
    Result enroll = runCommand(fleetArgv("enroll", {"--key", keyFile, n.name, key}));
    ASSERT_EQ(enroll.code, 0) << enroll.out << enroll.err;
  }

  void stopNode(const std::string& name, int signal) {
    auto& n = nodes[name];
    if (n.pid <= 0) return;
    ::kill(n.pid, signal);
    int status = 0;
    ::waitpid(n.pid, &status, 0);
    n.pid = -1;
  }

  // The node's status in etcd now (nullopt: none, the node is down).
  std::optional<NodeStatus> statusOf(const std::string& node) {
    auto v = client->get(keys.status(node));
    if (!v) return std::nullopt;
    return decodeStatus(v->value, keys.status(node));
  }

  // Waits, on an etcd watch of the node's status key, until `ok` holds for its
  // status (nullopt when the key is gone). Fails the test after `timeout`.
  bool awaitStatus(const std::string& node,
                   const std::function<bool(const std::optional<NodeStatus>&)>& ok,
                   std::chrono::milliseconds timeout = 20s) {
    const bool done = awaitStatusKey(*client, keys.status(node), ok, timeout);
    EXPECT_TRUE(done) << node << ": status not as expected within " << timeout.count()
                      << " ms; log:\n"
                      << slurp(nodes[node].log);
    return done;
  }

  // Until the node's status shows a cycle of a declaration at revision >= rev.
  bool awaitApplied(const std::string& node, int64_t rev) {
    return awaitStatus(node, [rev](const std::optional<NodeStatus>& s) {
      return s && s->revision >= rev && s->cycle > 0;
    });
  }

  // Until the node's log holds `n` lines containing `what` (an inotify watch of the log,
  // which the agent appends to).
  bool awaitLog(const std::string& node, const std::string& what, int64_t n,
                std::chrono::milliseconds timeout = 20s) {
    if (awaitFile(
            nodes[node].log, [&](const std::string& log) { return countOf(log, what) >= n; },
            timeout))
      return true;
    ADD_FAILURE() << node << ": fewer than " << n << " lines with \"" << what << "\" in "
                  << timeout.count() << " ms; log:\n"
                  << slurp(nodes[node].log);
    return false;
  }

  // `fleet push` of `text` to `targets`; returns the revision of each node's put.
  std::map<std::string, int64_t> pushTo(const std::string& targets, const std::string& text,
                                        std::vector<std::string> extra = {}) {
    const std::string path = declare(text, fmt::format("decl-{}.toml", ++pushes));
    std::vector<std::string> args = {"--nodes", targets, "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(path);
    Result r = push(args);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    std::map<std::string, int64_t> revisions;
    if (r.code != 0) return revisions;
    const nlohmann::json rNodes = r.json().at("nodes");
    for (const auto& n : rNodes)
      revisions[n.at("node").get<std::string>()] = n.value("revision", int64_t{0});
    return revisions;
  }

  // A bundle with a service that logs to the shared file when it starts and
  // when it is ready, 400 ms later, and tells its supervisor (Type=notify).
  // `readyAfter`: how long it takes from start to ready (sleep(1)'s argument).
  std::string serviceBundle(const std::string& readyAfter = "0.4") {
    return scriptBundle("bundle", fmt::format("echo \"start $1 $(date +%s%N)\" >> {0}\n"
                                              "sleep {1}\n"
                                              "echo \"ready $1 $(date +%s%N)\" >> {0}\n"
                                              "systemd-notify --no-block --ready\n"
                                              "exec sleep 100000\n",
                                              shared, readyAfter));
  }

  // A bundle (its digest) whose bin/svc is `body`, a shell script.
  std::string scriptBundle(const std::string& name, const std::string& body) {
    return test::scriptBundle(work, blobs, name, body);
  }

  static std::string serviceDecl(int64_t serial, const std::string& config,
                                 const std::string& bundle) {
    return test::serviceDecl(serial, config, bundle, /*notify=*/true);
  }

  // (start, ready) times of each service start, per node root, from the shared log.
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> startsAndReadies() {
    std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> out;
    std::istringstream in(slurp(shared));
    std::string what, who;
    int64_t at = 0;
    while (in >> what >> who >> at) {
      auto& v = out[who];
      if (what == "start") v.emplace_back(at, 0);
      if (what == "ready" && !v.empty()) v.back().second = at;
    }
    return out;
  }

  std::string blobs, shared;
  std::string nodeInterval = "1s";  // --interval of the nodes started next
  std::map<std::string, NodeProcess> nodes;
  std::map<std::string, std::string> clusterOf;  // a node started in another cluster
  std::string ownEtcdDir;                        // startOwnEtcd()'s, stopped at the end

  // An etcd of this test's own (tests that wipe or replace it), which `url` and
  // `client` then point at; stopped in TearDown after the nodes.
  void startOwnEtcd() {
    // Outside `work`: its dead-man switch (etcd.sh) ends by itself once `stop` removed it.
    char tmpl[] = "/tmp/mesh-fleet-etcd.XXXXXX";
    ownEtcdDir = std::string(::mkdtemp(tmpl)) + "/etcd";
    Result r = runCommand({"env", fmt::format("ETCD_OWNER_PID={}", ::getpid()),
                           ::mesh::test::etcdScript(), "start", ownEtcdDir});
    ASSERT_EQ(r.code, 0) << r.err;
    url = r.out.substr(0, r.out.find('\n'));
    client = std::make_unique<EtcdClient>(url);
  }
  int pushes = 0;
};

TEST_F(Nodes, PushToAllConvergesEverywhereAndPushToOneChangesOnlyIt) {
  for (const char* n : {"n1", "n2", "n3"}) startNode(n);
  auto revs = pushTo("n1,n2,n3", fileDecl(1, "one"));
  ASSERT_EQ(revs.size(), 3u);
  for (const auto& [node, rev] : revs) ASSERT_TRUE(awaitApplied(node, rev));
  for (const auto& [node, n] : nodes) EXPECT_EQ(slurp(n.root + "/etc/app.conf"), "one");

  Result st = status({"--json"});
  EXPECT_EQ(st.code, 0) << st.out << st.err;
  const nlohmann::json stNodes = st.json().at("nodes");
  for (const auto& row : stNodes) {
    EXPECT_EQ(row.at("state"), "converged") << row.dump();
    EXPECT_EQ(row.at("applied_serial"), 1) << row.dump();
  }

  const auto before1 = fs::last_write_time(nodes["n1"].root + "/etc/app.conf");
  const auto status1 = statusOf("n1");
  auto rev2 = pushTo("n2", fileDecl(2, "two"));
  ASSERT_TRUE(awaitApplied("n2", rev2.at("n2")));
  EXPECT_EQ(slurp(nodes["n2"].root + "/etc/app.conf"), "two");
  EXPECT_EQ(slurp(nodes["n1"].root + "/etc/app.conf"), "one");
  EXPECT_EQ(slurp(nodes["n3"].root + "/etc/app.conf"), "one");
  EXPECT_EQ(fs::last_write_time(nodes["n1"].root + "/etc/app.conf"), before1);
  ASSERT_TRUE(status1);
  EXPECT_EQ(statusOf("n1")->revision, status1->revision);
  EXPECT_EQ(statusOf("n3")->serial, 1);

  st = status({"--json"});
  EXPECT_EQ(st.code, 0) << st.out << st.err;
  std::map<std::string, int64_t> applied;
  const nlohmann::json stNodes2 = st.json().at("nodes");
  for (const auto& row : stNodes2)
    applied[row.at("node")] = row.at("applied_serial").get<int64_t>();
  EXPECT_EQ(applied, (std::map<std::string, int64_t>{{"n1", 1}, {"n2", 2}, {"n3", 1}}));
}

// Issue 13: a 2 MB declaration was refused by etcd ("request is too large"). It is
// stored in chunks; a real node reads them, checks the signed digest and applies it.
TEST_F(Nodes, ADeclarationOverEtcdsRequestLimitIsAppliedFromItsChunks) {
  startNode("n1");
  const std::string content(2 * 1024 * 1024, 'x');
  auto revs = pushTo("n1", fileDecl(1, content));
  ASSERT_EQ(revs.size(), 1u);
  ASSERT_GT(client->keysUnder(keys.bodiesPrefix()).kvs.size(), 1u) << "stored in chunks";
  ASSERT_TRUE(awaitApplied("n1", revs.at("n1")));
  const auto s = statusOf("n1");
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->refused) << s->refused->reason;
  EXPECT_EQ(s->serial, 1);
  EXPECT_EQ(slurp(nodes["n1"].root + "/etc/app.conf"), content);
}

// `fleet forget --force` of a node whose agent runs removes its status and heartbeat;
// the agent sees them go (its watch covers its own keys) and publishes both again within
// one heartbeat period: `fleet status` shows it, unenrolled, never nothing at all.
TEST_F(Nodes, ARunningNodeForgottenWithForceShowsAgainUnenrolledWithinOneHeartbeat) {
  startNode("n1");
  auto revs = pushTo("n1", fileDecl(1, "one"));
  ASSERT_TRUE(awaitApplied("n1", revs.at("n1")));
  // Idle first (the cycle after the one that applied: nothing created): from then on the
  // node has nothing new to publish, and only seeing its keys go can bring them back.
  ASSERT_TRUE(awaitStatus("n1", [](const std::optional<NodeStatus>& s) {
    return s && s->serial == 1 && s->created == 0 && s->unchanged > 0;
  }));
  Result forgot = runCommand(fleetArgv("forget", {"--force", "n1"}));
  ASSERT_EQ(forgot.code, 0) << forgot.out << forgot.err;
  const auto forgotAt = Clock::now();
  ASSERT_TRUE(awaitStatus(
      "n1", [](const std::optional<NodeStatus>& s) { return s && s->cycle > 0; },
      kHeartbeatPeriod));
  std::fprintf(
      stderr, "[forget] the node published again %lld ms after fleet forget --force\n",
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - forgotAt).count()));
  EXPECT_TRUE(client->get(heartbeatKey(keys, "n1"))) << "its heartbeat was not put again";
  Result st = status({"--json"});
  EXPECT_EQ(st.code, 1) << "an unenrolled node does not count as converged: " << st.out;
  const auto rows = st.json().at("nodes");
  ASSERT_EQ(rows.size(), 1u) << st.out;
  EXPECT_EQ(rows[0].at("node"), "n1") << rows[0].dump();
  EXPECT_EQ(rows[0].at("state"), "unenrolled") << rows[0].dump();
}

TEST_F(Nodes, AKilledNodeShowsDownOnceItsLeaseExpires) {
  for (const char* n : {"n1", "n2", "n3"}) startNode(n);
  auto revs = pushTo("n1,n2,n3", fileDecl(1, "one"));
  for (const auto& [node, rev] : revs) ASSERT_TRUE(awaitApplied(node, rev));

  stopNode("n3", SIGKILL);  // no goodbye: only the lease (15 s) tells
  const auto killed = Clock::now();
  ASSERT_TRUE(awaitStatus(
      "n3", [](const auto& s) { return !s.has_value(); }, 30s));
  EXPECT_GE(Clock::now() - killed, 1s) << "gone before its lease could expire";

  Result st = status({"--json"});
  EXPECT_EQ(st.code, 1) << st.out << st.err;
  std::map<std::string, std::string> states;
  const nlohmann::json stNodes = st.json().at("nodes");
  for (const auto& row : stNodes) states[row.at("node")] = row.at("state");
  EXPECT_EQ(states, (std::map<std::string, std::string>{
                        {"n1", "converged"}, {"n2", "converged"}, {"n3", "down"}}));
  Result text = status();
  EXPECT_NE(text.out.find("down"), std::string::npos) << text.out;
}

TEST_F(Nodes, ATamperedDeclarationIsRefusedAndShowsInFleetStatus) {
  for (const char* n : {"n1", "n2", "n3"}) startNode(n);
  auto revs = pushTo("n1,n2,n3", fileDecl(1, "one"));
  for (const auto& [node, rev] : revs) ASSERT_TRUE(awaitApplied(node, rev));

  // Someone with write access to etcd changes n2's declaration but cannot sign it.
  auto pushed = pushedTo("n2");
  ASSERT_TRUE(pushed);
  PushedDeclaration evil = *pushed;
  evil.text = fileDecl(2, "evil");
  auto forged = decodeStatement(evil.statement, "n2");
  forged.serial = 2;
  forged.declarationDigest = Digest::ofBytes(evil.text).str();
  evil.statement = encodeStatement(forged);
  const int64_t rev = client->put(keys.declaration("n2"), encodePushed(evil));
  ASSERT_TRUE(awaitStatus(
      "n2", [rev](const auto& s) { return s && s->refused && s->refused->revision == rev; }));
  EXPECT_NE(statusOf("n2")->refused->reason.find("does not match"), std::string::npos)
      << statusOf("n2")->refused->reason;
  EXPECT_EQ(slurp(nodes["n2"].root + "/etc/app.conf"), "one");

  Result st = status({"--json"});
  EXPECT_EQ(st.code, 1) << st.out << st.err;
  const nlohmann::json stNodes = st.json().at("nodes");
  for (const auto& row : stNodes)
    EXPECT_EQ(row.at("state"), row.at("node") == "n2" ? "refused" : "converged") << row.dump();

  // A properly signed push afterwards is accepted and clears the refusal.
  auto good = pushTo("n2", fileDecl(3, "three"));
  ASSERT_TRUE(awaitStatus(
      "n2", [&](const auto& s) { return s && s->revision >= good.at("n2") && !s->refused; }));
  EXPECT_EQ(slurp(nodes["n2"].root + "/etc/app.conf"), "three");
}

TEST_F(Nodes, WithEtcdAwayServicesKeepRunningUnrestartedAndAPushAfterConverges) {
  const std::string bundle = serviceBundle();
  for (const char* n : {"n1", "n2", "n3"}) startNode(n);
  auto revs = pushTo("n1,n2,n3", serviceDecl(1, "one", bundle));
  for (const auto& [node, rev] : revs) ASSERT_TRUE(awaitApplied(node, rev));
  ASSERT_EQ(startsAndReadies().size(), 3u) << slurp(shared);

  Result pause = runCommand({::mesh::test::etcdScript(), "pause", etcdDir()});
  ASSERT_EQ(pause.code, 0) << pause.err;
  // Three more cycles on every node while etcd is away (interval 1 s).
  std::map<std::string, int64_t> cycles;
  for (const auto& [name, n] : nodes) cycles[name] = countOf(slurp(n.log), "unchanged, 0 removed");
  for (const auto& [name, n] : nodes)
    ASSERT_TRUE(awaitLog(name, "unchanged, 0 removed", cycles[name] + 3));
  Result resume = runCommand({::mesh::test::etcdScript(), "resume", etcdDir()});
  ASSERT_EQ(resume.code, 0) << resume.err;

  for (const auto& [root, starts] : startsAndReadies())
    EXPECT_EQ(starts.size(), 1u) << root << " restarted while etcd was away:\n" << slurp(shared);
  for (const auto& [name, n] : nodes) {
    EXPECT_EQ(countOf(slurp(n.log), "restarted app.service"), 0) << slurp(n.log);
    EXPECT_NE(slurp(n.log).find("stays in force"), std::string::npos) << slurp(n.log);
  }

  auto revs2 = pushTo("n1,n2,n3", serviceDecl(2, "two", bundle));
  for (const auto& [node, rev] : revs2) ASSERT_TRUE(awaitApplied(node, rev));
  for (const auto& [name, n] : nodes) EXPECT_EQ(slurp(n.root + "/etc/app.conf"), "two");
  for (const auto& [root, starts] : startsAndReadies())
    EXPECT_EQ(starts.size(), 2u) << root << ": the config change restarts it exactly once:\n"
                                 << slurp(shared);
}

TEST_F(Nodes, MaxParallelRestartsOneNeverOverlapsRestarts) {
  const std::string bundle = serviceBundle();
  for (const char* n : {"n1", "n2", "n3"}) startNode(n);
  auto revs = pushTo("n1,n2,n3", serviceDecl(1, "one", bundle));
  for (const auto& [node, rev] : revs) ASSERT_TRUE(awaitApplied(node, rev));

  auto revs2 = pushTo("n1,n2,n3", serviceDecl(2, "two", bundle), {"--max-parallel-restarts", "1"});
  for (const auto& [node, rev] : revs2) ASSERT_TRUE(awaitApplied(node, rev));

  // The second start of each node's service: its restart. None may overlap another.
  std::vector<std::pair<int64_t, int64_t>> restarts;
  for (const auto& [root, starts] : startsAndReadies()) {
    ASSERT_EQ(starts.size(), 2u) << root << ":\n" << slurp(shared);
    ASSERT_GT(starts[1].second, starts[1].first) << "no ready time:\n" << slurp(shared);
    restarts.push_back(starts[1]);
  }
  std::sort(restarts.begin(), restarts.end());
  for (size_t i = 1; i < restarts.size(); ++i)
    EXPECT_GT(restarts[i].first, restarts[i - 1].second)
        << "restart " << i << " started before the one before it was ready:\n"
        << slurp(shared);
  // No slot is left behind.
  EXPECT_TRUE(client->getPrefix(keys.restartSlots("app.service")).kvs.empty());
}

TEST_F(Nodes, ANodeStartedWhileEtcdIsAwayConvergesToItsCachedDeclaration) {
  startNode("n1");
  auto revs = pushTo("n1", fileDecl(1, "one"));
  ASSERT_TRUE(awaitApplied("n1", revs.at("n1")));
  stopNode("n1", SIGTERM);
  EXPECT_FALSE(statusOf("n1")) << "a node stopping on purpose revokes its lease at once";
  fs::remove(nodes["n1"].root + "/etc/app.conf");  // drift the node must repair

  Result pause = runCommand({::mesh::test::etcdScript(), "pause", etcdDir()});
  ASSERT_EQ(pause.code, 0) << pause.err;
  startNode("n1");
  ASSERT_TRUE(awaitLog("n1", "created app.config", 2));
  EXPECT_EQ(slurp(nodes["n1"].root + "/etc/app.conf"), "one");
  EXPECT_NE(slurp(nodes["n1"].log)
                .find("cached pushed declaration (revision " + std::to_string(revs.at("n1"))),
            std::string::npos)
      << slurp(nodes["n1"].log);

  Result resume = runCommand({::mesh::test::etcdScript(), "resume", etcdDir()});
  ASSERT_EQ(resume.code, 0) << resume.err;
  ASSERT_TRUE(awaitApplied("n1", revs.at("n1")));
  auto next = pushTo("n1", fileDecl(2, "two"));
  ASSERT_TRUE(awaitApplied("n1", next.at("n1")));
  EXPECT_EQ(slurp(nodes["n1"].root + "/etc/app.conf"), "two");
}

TEST_F(Nodes, ANodeBackAfterACompactionReadsItsDeclarationAgain) {
  startNode("n1");
  auto revs = pushTo("n1", fileDecl(1, "one"));
  ASSERT_TRUE(awaitApplied("n1", revs.at("n1")));
  stopNode("n1", SIGTERM);

  pushTo("n1", fileDecl(2, "two"));
  auto last = pushTo("n1", fileDecl(3, "three"));
  // The revisions after the one n1 saw are compacted away: a node never resumes a watch
  // from a revision it remembers (it reads its key first), so it still gets serial 3.
  client->compact(last.at("n1"));
  startNode("n1");
  ASSERT_TRUE(awaitApplied("n1", last.at("n1")));
  EXPECT_EQ(slurp(nodes["n1"].root + "/etc/app.conf"), "three");
  EXPECT_EQ(statusOf("n1")->serial, 3);
}

TEST_F(Nodes, BadFleetOptionsAreBadInputAndStartNothing) {
  const std::string root = work + "/bad";
  fs::create_directories(root);
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--node", "n1"}, "requires a trusted operator key"},
      {{"--node", "n/1", "--trust", operatorKey.text()}, "--node \"n/1\""},
      {{"--node", "n1", "--cluster", "", "--trust", operatorKey.text()}, "--cluster"},
      {{"--node", "n1", "--trust", operatorKey.text(), "--declaration", root + "/d.toml"},
       "--declaration and --etcd"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = {MESH_HOST_BIN, "run", "--etcd", url, "--root", root};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    Result r = runCommand(argv);
    EXPECT_EQ(r.code, 2) << c.says << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  Result r = runCommand({MESH_HOST_BIN, "run", "--etcd", "127.0.0.1:2379", "--root", root, "--node",
                         "n1", "--trust", operatorKey.text()});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("expected an http:// or https:// URL"), std::string::npos) << r.err;
  EXPECT_TRUE(client->getPrefix(keys.nodesPrefix()).kvs.empty());
}

TEST_F(Nodes, AReplayedOlderDeclarationIsRefusedThoughValidlySigned) {
  startNode("n1");
  auto first = pushTo("n1", fileDecl(1, "one"));
  auto second = pushTo("n1", fileDecl(2, "two"));
  ASSERT_TRUE(awaitApplied("n1", second.at("n1")));

  // Serial 1 exactly as the operator signed it, put back by someone with etcd access.
  const std::string old = fileDecl(1, "one");
  const int64_t rev =
      client->put(keys.declaration("n1"), signedValue(statementFor(old, {"n1"}, 1), old));
  ASSERT_TRUE(awaitStatus(
      "n1", [rev](const auto& s) { return s && s->refused && s->refused->revision == rev; }));
  EXPECT_NE(statusOf("n1")->refused->reason.find("serial 1 is older than serial 2"),
            std::string::npos)
      << statusOf("n1")->refused->reason;
  EXPECT_EQ(slurp(nodes["n1"].root + "/etc/app.conf"), "two");
  EXPECT_EQ(statusOf("n1")->serial, 2);
}

TEST_F(Nodes, FailingAndChurningResourcesOfRealNodesShowInFleetStatus) {
  const std::string bundle = serviceBundle();
  startNode("n1");
  // n2's process applier takes its unit for edited every other cycle (a test-only
  // fault seam): the service is replaced and restarted again and again — churn.
  startNode("n2", {"MESH_HOST_FAULT=recreate-every-other-cycle"});
  auto revs = pushTo("n1,n2", serviceDecl(1, "one", bundle) + R"(
[module.app.file.blocked]
path = "/etc/app.conf/inside"
content = "x"
requires = ["app.config"]
)");
  ASSERT_TRUE(awaitStatus("n1", [&](const auto& s) {
    return s && s->revision >= revs.at("n1") && !s->failing.empty();
  }));
  const auto n1 = statusOf("n1");
  ASSERT_EQ(n1->failing.size(), 1u);
  EXPECT_EQ(n1->failing[0].first, "app.blocked");
  EXPECT_EQ(n1->failed, 1);
  ASSERT_TRUE(awaitStatus("n2", [](const auto& s) { return s && !s->churning.empty(); }));
  EXPECT_EQ(statusOf("n2")->churning, std::vector<std::string>{"app.svc"});

  Result st = status({"--json"});
  EXPECT_EQ(st.code, 1) << st.out << st.err;
  const nlohmann::json stNodes = st.json().at("nodes");
  std::map<std::string, std::string> states;
  for (const auto& row : stNodes) states[row.at("node")] = row.at("state");
  // n2 fails the same resource too; failing outranks churning in a row.
  EXPECT_EQ(states.at("n1"), "failing");
  EXPECT_EQ(states.at("n2"), "failing");
  for (const auto& row : stNodes)
    if (row.at("node") == "n2") {
      EXPECT_EQ(row.at("churning"), nlohmann::json::array({"app.svc"}));
    }
}

// --- Issue 27: bytes from outside never end the agent, and never reach a terminal raw ---

// Whether a process is still running (not exited, not a zombie we reaped).
bool running(pid_t pid) {
  int status = 0;
  return pid > 0 && ::waitpid(pid, &status, WNOHANG) == 0;
}

// No byte a terminal would obey, and nothing that is not UTF-8 (util/text_safe.hh).
void expectNothingRaw(const std::string& what, const std::string& text) {
  EXPECT_TRUE(mesh::test::nothingRaw(text, mesh::test::Shown::Text)) << what;
}

// Issue 27.1: a service whose last output line holds \377 made the failure reason invalid
// UTF-8, and the status publisher's thread died on it (std::terminate, rc 134) — at every
// start again. Now the reason is published with the byte replaced, the agent lives and
// starts again, and the fleet commands show it escaped.
TEST_F(Nodes, AFailureReasonThatIsNotUtf8NeverEndsTheAgent) {
  const std::string bundle =
      scriptBundle("evil", "printf 'crash \\377 \\033[2K\\033[1Aconverged \\r\\n'\nexit 1\n");
  startNode("n1");
  auto revs = pushTo("n1", fmt::format(R"(serial = 1

[module.app.process.svc]
bundle = "{}"
unit = {{ ExecStart = "{{bundle}}/bin/svc" }}
)",
                                       bundle));
  ASSERT_TRUE(awaitStatus("n1", [&](const auto& s) {
    return s && s->revision >= revs.at("n1") && !s->failing.empty();
  }));
  EXPECT_TRUE(running(nodes["n1"].pid)) << slurp(nodes["n1"].log);
  const auto n1 = statusOf("n1");
  ASSERT_EQ(n1->failing.size(), 1u);
  EXPECT_NE(n1->failing[0].second.find("crash \xef\xbf\xbd"), std::string::npos)
      << n1->failing[0].second;
  expectNothingRaw("the agent's log", slurp(nodes["n1"].log));

  // Stopped and started again: it publishes, and lives (before, it died again at start).
  stopNode("n1", SIGTERM);
  startNode("n1");
  ASSERT_TRUE(awaitStatus("n1", [&](const auto& s) { return s && s->pid == nodes["n1"].pid; }));
  EXPECT_TRUE(running(nodes["n1"].pid)) << slurp(nodes["n1"].log);

  Result st = status({"--json"});
  EXPECT_EQ(st.code, 1) << st.out << st.err;
  const auto j = st.json();
  ASSERT_EQ(j.at("nodes").size(), 1u);
  expectNothingRaw("fleet status --json", st.out);
  Result text = status();
  EXPECT_EQ(text.code, 1) << text.out << text.err;
  expectNothingRaw("fleet status", text.out + text.err);
  EXPECT_NE(text.out.find("\\e[2K"), std::string::npos) << text.out;
}

// Issue 27.1 and 27.2: one etcd key whose node name holds \xff, ESC and CR broke `fleet
// status --json` and drew over the table; now the JSON parses (the bytes replaced) and the
// text shows them escaped, one row per node.
TEST_F(Nodes, ANodeNameFromEtcdThatIsNotUtf8OrHoldsControlsIsShownEscaped) {
  const std::string evil = "evil\xff\x1b[2K\r\x1b[1Afake-converged\n";
  client->put(keys.nodesPrefix() + evil + "/status", "{\"not\": \"signed\"}");
  client->put(keys.nodesPrefix() + evil + "/enrollment", "not JSON \xff\x1b]0;title\x07");
  Result st = status({"--json"});
  EXPECT_EQ(st.code, 1) << st.out << st.err;
  const auto j = st.json();
  ASSERT_EQ(j.at("nodes").size(), 1u) << st.out;
  EXPECT_EQ(j["nodes"][0]["node"], "evil\xef\xbf\xbd\x1b[2K\r\x1b[1Afake-converged\n");
  expectNothingRaw("fleet status --json", st.out);
  Result text = status();
  EXPECT_EQ(text.code, 1) << text.out << text.err;
  expectNothingRaw("fleet status", text.out + text.err);
  EXPECT_NE(text.out.find("evil\\xff\\e[2K\\r\\e[1Afake-converged\\n"), std::string::npos)
      << text.out;
  Result history = runCommand(fleetArgv("history", {"--json"}));
  EXPECT_EQ(history.code, 0) << history.out << history.err;
  (void)history.json();
}

// --- Issue 12 (part A): everything a node acts on is signed; convergence by content ---

// Issue 12.1: n1's signed entry copied onto n2's key (or onto a node's key in another
// cluster) is refused: the statement names the nodes and the cluster it is for.
TEST_F(Nodes, AStatementCopiedToAnotherNodesOrClustersKeyIsRefused) {
  const std::string otherCluster = cluster + "-b";
  clusterOf["m1"] = otherCluster;
  for (const char* n : {"n1", "n2", "m1"}) startNode(n);
  auto one = pushTo("n1", fileDecl(1, "one"));
  auto two = pushTo("n2", fileDecl(1, "two"));
  ASSERT_TRUE(awaitApplied("n1", one.at("n1")));
  ASSERT_TRUE(awaitApplied("n2", two.at("n2")));

  const std::string copied = client->get(keys.declaration("n1"))->value;
  const int64_t rev = client->put(keys.declaration("n2"), copied);
  ASSERT_TRUE(awaitStatus(
      "n2", [rev](const auto& s) { return s && s->refused && s->refused->revision == rev; }));
  const auto n2 = statusOf("n2");
  EXPECT_NE(n2->refused->reason.find("the statement is for nodes n1 and this node is n2"),
            std::string::npos)
      << n2->refused->reason;
  EXPECT_EQ(n2->refused->valueDigest, valueDigest(copied));
  EXPECT_EQ(slurp(nodes["n2"].root + "/etc/app.conf"), "two");
  EXPECT_EQ(n2->serial, 1);
  EXPECT_NE(slurp(nodes["n2"].log).find("refused the pushed declaration"), std::string::npos);
  Result st = status({"--json"});
  EXPECT_EQ(st.code, 1) << st.out;
  const auto shown = st.json();  // held: a range over a temporary's member dangles
  for (const auto& row : shown.at("nodes"))
    if (row.at("node") == "n2") {
      EXPECT_EQ(row.at("state"), "refused") << row.dump();
    }

  const FleetKeys other{otherCluster};
  const int64_t revM = client->put(other.declaration("m1"), copied);
  ASSERT_TRUE(awaitLog("m1", "refused the pushed declaration", 1));
  EXPECT_NE(slurp(nodes["m1"].log).find("the statement is for cluster " + cluster),
            std::string::npos)
      << slurp(nodes["m1"].log);
  EXPECT_FALSE(fs::exists(nodes["m1"].root + "/etc/app.conf"));
  (void)revM;

  // A glob push reaches both and carries its selector: each node matches its own name.
  auto glob = pushTo("n*", fileDecl(2, "glob"));
  for (const char* n : {"n1", "n2"}) {
    ASSERT_TRUE(awaitApplied(n, glob.at(n)));
    EXPECT_EQ(slurp(nodes[n].root + "/etc/app.conf"), "glob") << n;
  }
}

// Issue 12.3: no unsigned field changes what a node does. Each field of the statement
// changed by an etcd writer (max_parallel_restarts, serial, nodes, cluster, push time)
// breaks the signature; a value in the old format is refused as such.
TEST_F(Nodes, EveryFieldANodeActsOnIsSignedAndATamperedOneIsRefused) {
  startNode("n1");
  auto revs = pushTo("n1", fileDecl(1, "one"), {"--max-parallel-restarts", "2"});
  ASSERT_TRUE(awaitApplied("n1", revs.at("n1")));
  const auto pushed = *pushedTo("n1");
  const auto st = decodeStatement(pushed.statement, "n1");
  ASSERT_EQ(st.maxParallelRestarts, 2);
  std::vector<std::pair<std::string, Statement>> tampered;
  auto t = st;
  t.maxParallelRestarts = 1;
  tampered.emplace_back("max_parallel_restarts", t);
  t = st;
  t.serial = 7;
  tampered.emplace_back("serial", t);
  t = st;
  t.selector.items = {"*"};
  tampered.emplace_back("nodes", t);
  t = st;
  t.pushedAtMs += 1000;
  tampered.emplace_back("pushed_at_ms", t);
  for (const auto& [field, changed] : tampered) {
    PushedDeclaration p = pushed;
    p.statement = encodeStatement(changed);
    const std::string value = encodePushed(p);
    client->put(keys.declaration("n1"), value);
    ASSERT_TRUE(awaitStatus("n1", [&](const auto& s) {
      return s && s->refused && s->refused->valueDigest == valueDigest(value);
    })) << field;
    EXPECT_NE(statusOf("n1")->refused->reason.find("does not match its content"), std::string::npos)
        << field << ": " << statusOf("n1")->refused->reason;
  }
  const std::string old = R"({"declaration": "serial = 9\n", "signature": "", "serial": 9,
                             "max_parallel_restarts": 1})";
  client->put(keys.declaration("n1"), old);
  ASSERT_TRUE(awaitStatus("n1", [&](const auto& s) {
    return s && s->refused && s->refused->valueDigest == valueDigest(old);
  }));
  EXPECT_NE(statusOf("n1")->refused->reason.find("format before signed statements"),
            std::string::npos)
      << statusOf("n1")->refused->reason;
  EXPECT_EQ(slurp(nodes["n1"].root + "/etc/app.conf"), "one");
  EXPECT_EQ(statusOf("n1")->serial, 1);
}

// Issue 12.2: etcd is emptied and started again (wiped; same cluster ID, revisions from 1)
// or replaced (another cluster ID). The node notices, reads its key again and publishes
// again; a push afterwards is applied, and `push --wait` says so only once it is.
class NodesWithOwnEtcd : public Nodes {
 protected:
  void resetScenario(const std::string& token, const std::string& noticed) {
    startOwnEtcd();
    if (HasFatalFailure()) return;
    startNode("n1");
    auto revs = pushTo("n1", fileDecl(4, "four"));
    ASSERT_TRUE(awaitApplied("n1", revs.at("n1")));
    // The old etcd well above where a fresh one starts.
    for (int i = 0; i < 30; ++i) client->put("/filler", std::to_string(i));
    const auto before = statusOf("n1");
    ASSERT_TRUE(before);

    Result pause = runCommand({::mesh::test::etcdScript(), "pause", ownEtcdDir});
    ASSERT_EQ(pause.code, 0) << pause.err;
    fs::remove_all(ownEtcdDir + "/data");
    Result resume = runCommand(
        {"env", "ETCD_CLUSTER_TOKEN=" + token, ::mesh::test::etcdScript(), "resume", ownEtcdDir});
    ASSERT_EQ(resume.code, 0) << resume.err;
    ASSERT_FALSE(client->get(keys.declaration("n1"))) << "etcd was not emptied";
    // The node's enrollment went with the rest: the operator enrolls it again.
    enrollNode(nodes["n1"], /*again=*/true);

    ASSERT_TRUE(awaitLog("n1", noticed, 1));
    ASSERT_TRUE(awaitStatus("n1", [](const auto& s) { return s.has_value(); }))
        << "the node publishes again on the new etcd";
    Result r = push({"--node", "n1", "--wait", "20s", declare(fileDecl(5, "five"), "five.toml")});
    EXPECT_EQ(r.code, 0) << r.out << r.err << slurp(nodes["n1"].log);
    EXPECT_NE(r.out.find("applied n1: serial 5"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("1 of 1 node(s) applied serial 5"), std::string::npos) << r.out;
    EXPECT_EQ(slurp(nodes["n1"].root + "/etc/app.conf"), "five");
    Result st = status({"--json"});
    EXPECT_EQ(st.code, 0) << st.out;
    const auto row = st.json().at("nodes").at(0);
    EXPECT_EQ(row.at("state"), "converged") << row.dump();
    EXPECT_EQ(row.at("applied_serial"), 5) << row.dump();
    EXPECT_EQ(row.at("applied_digest"), Digest::ofBytes(fileDecl(5, "five")).str());
  }
};

TEST_F(NodesWithOwnEtcd, AWipedEtcdIsNoticedByItsRevisionAndAPushAfterItIsApplied) {
  resetScenario("etcd-cluster", "went back from revision");
}

TEST_F(NodesWithOwnEtcd, AReplacedEtcdIsNoticedByItsClusterIdAndAPushAfterItIsApplied) {
  resetScenario("another-cluster", "is another cluster now");
}

// `push --wait` quotes the cycle that applied the push, even when the node has run
// no-op cycles since (interval 1 s here).
TEST_F(Nodes, PushWaitQuotesTheCycleThatAppliedThePush) {
  startNode("n1");
  const std::string decl = declare(fileDecl(1, "one"), "one.toml");
  Result first = push({"--node", "n1", "--wait", "20s", decl});
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  EXPECT_NE(first.out.find("1 created"), std::string::npos) << first.out;
  const auto applied = statusOf("n1");
  ASSERT_TRUE(applied && applied->appliedCycle);
  const int64_t cycle = applied->appliedCycle->cycle;
  // Two more cycles, which found nothing to do (and wrote nothing: the status is as it was).
  ASSERT_TRUE(awaitLog("n1", kCycleLine, countOf(slurp(nodes["n1"].log), kCycleLine) + 2));
  Result again = push({"--node", "n1", "--wait", "20s", decl});
  EXPECT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("unchanged n1"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find(fmt::format("in cycle {}: 1 created, 0 updated", cycle)),
            std::string::npos)
      << again.out;
}

// Issue 26 item 6: an agent stopped (SIGTERM) in the middle of a push's cycle published
// the new serial as applied with all counts 0, and `push --wait` counted it. The cycle
// is held deterministically on a credential read from a FIFO (the read blocks until the
// test writes): SIGTERM arrives while it is there, the cycle then stops after that
// resource. Neither the status put on the way out nor the one a new agent puts first
// (from the store) may claim the push; the new agent's finished cycle then does.
TEST_F(Nodes, AnInterruptedCycleIsNeverPublishedAsApplied) {
  nodeInterval = "1h";
  startNode("n1");
  auto revs = pushTo("n1", fileDecl(1, "one"));
  ASSERT_TRUE(awaitApplied("n1", revs.at("n1")));
  const std::string fifo = work + "/slow-secret";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  using Feeder = ::mesh::test::FifoFeeder;
  // Ends the node while a feeder still answers its reads (declared after the feeder): a
  // node blocked in one would never see its SIGTERM.
  struct StopFirst {
    std::function<void()> stop;
    ~StopFirst() { stop(); }
  };
  const std::string two = fmt::format(
      "serial = 2\n\n[module.app.file.config]\npath = \"/etc/app.conf\"\ncontent = \"two\"\n\n"
      "[module.app.credential.key]\npath = \"/etc/app.key\"\nfrom = \"{}\"\n\n"
      "[module.app.file.zz]\npath = \"/etc/app.zz\"\ncontent = \"last\"\n",
      fifo);
  revs = pushTo("n1", two);
  ASSERT_EQ(revs.size(), 1u);
  {
    Feeder feeder(fifo);
    StopFirst stopFirst{[&] { stopNode("n1", SIGTERM); }};
    ASSERT_TRUE(feeder.awaitHeld()) << "the cycle never reached the credential; log:\n"
                                    << slurp(nodes["n1"].log);
    ::kill(nodes["n1"].pid, SIGTERM);
    // The stop flag is set before this line is logged.
    ASSERT_TRUE(awaitLog("n1", "stopping on SIGTERM", 1));
    feeder.release();
    int exitStatus = 0;
    ASSERT_EQ(::waitpid(nodes["n1"].pid, &exitStatus, 0), nodes["n1"].pid);
    nodes["n1"].pid = -1;
    EXPECT_TRUE(WIFEXITED(exitStatus) && WEXITSTATUS(exitStatus) == 0) << slurp(nodes["n1"].log);
  }
  ASSERT_NE(slurp(nodes["n1"].log).find("(interrupted: stopping)"), std::string::npos)
      << "the cycle was not cut short; log:\n"
      << slurp(nodes["n1"].log);
  EXPECT_FALSE(fs::exists(nodes["n1"].root + "/etc/app.zz")) << "the cycle ran through";
  // The copy of the last status put, which outlives the node's lease.
  const auto seen = client->get(keys.seen("n1"));
  ASSERT_TRUE(seen);
  const auto last = decodeStatus(seen->value, keys.seen("n1"));
  EXPECT_EQ(last.serial, 1) << "the interrupted cycle was published as having applied serial "
                            << last.serial.value_or(0) << " (cycle " << last.cycle << ")";

  // A new agent publishes what the store says was applied before its first cycle, which
  // is held at the credential again: that status must not claim serial 2 either.
  startNode("n1");
  std::optional<NodeStatus> first;
  ASSERT_TRUE(awaitStatus("n1", [&](const std::optional<NodeStatus>& s) {
    if (s) first = s;
    return s.has_value();
  }));
  Feeder feeder(fifo);
  StopFirst stopFirst{[&] { stopNode("n1", SIGTERM); }};
  ASSERT_TRUE(feeder.awaitHeld()) << slurp(nodes["n1"].log);
  ASSERT_TRUE(first);
  EXPECT_NE(first->serial, 2) << "a new agent published the interrupted cycle " << first->cycle
                              << " as having applied serial 2";
  feeder.release();
  ASSERT_TRUE(awaitStatus("n1", [](const std::optional<NodeStatus>& s) {
    return s && s->serial == 2 && s->cycle > 0 && s->failed == 0;
  }));
  EXPECT_EQ(slurp(nodes["n1"].root + "/etc/app.zz"), "last");
  // (Its content is the secret as often as the feeder wrote it while the cycle read.)
  EXPECT_TRUE(fs::exists(nodes["n1"].root + "/etc/app.key"));
}

// Issue 26 item 7, found by the system simulation (seed 20261202 step 27 --fleet): a
// pushed declaration the agent could not cache, its state directory full, left no
// error behind — `status` said the node was healthy while the push was not applied.
// The state directory here is a small tmpfs, filled once the first push is applied.
TEST_F(Nodes, APushThatCannotBeCachedOnAFullStateDirectoryIsAnErrorInStatus) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  const std::string stateDir = work + "/n1/var/lib/mesh-host";
  fs::create_directories(stateDir);
  if (::mount("tmpfs", stateDir.c_str(), "tmpfs", 0, "size=2048k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs at " << stateDir << ": " << std::strerror(errno);
  // The node ends before its state directory goes (it holds files there).
  struct Unmount {
    std::function<void()> stop;
    std::string dir;
    ~Unmount() {
      stop();
      ::umount2(dir.c_str(), MNT_DETACH);
    }
  } unmount{[&] { stopNode("n1", SIGTERM); }, stateDir};

  nodeInterval = "1h";
  startNode("n1");
  auto revs = pushTo("n1", fileDecl(1, "one"));
  ASSERT_TRUE(awaitApplied("n1", revs.at("n1")));
  ASSERT_EQ(slurp(nodes["n1"].root + "/etc/app.conf"), "one");
  {
    // Full: written until ENOSPC, nothing given back.
    const int fd = ::open((stateDir + "/filler").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    const std::string chunk(64 * 1024, 'f');
    while (::write(fd, chunk.data(), chunk.size()) > 0) {
    }
    ASSERT_EQ(errno, ENOSPC);
    ::close(fd);
  }
  // Larger than any page the store has free.
  const std::string big(256 * 1024, 'b');
  pushTo("n1", fileDecl(2, big));
  ASSERT_TRUE(awaitLog("n1", "database or disk is full", 1)) << "the push was never tried";
  EXPECT_EQ(slurp(nodes["n1"].root + "/etc/app.conf"), "one");

  Result st =
      runCommand({MESH_HOST_BIN, "status", "--root", nodes["n1"].root, "--state-dir", stateDir});
  EXPECT_EQ(st.code, 1) << "a node that could not take a push is not healthy:\n"
                        << st.out << st.err;
  EXPECT_NE(st.out.find("database or disk is full"), std::string::npos) << st.out;
  EXPECT_EQ(st.out.find("killed or crashed"), std::string::npos) << st.out;
}

// What an agent tells systemd (sd_notify): a datagram socket at `path`, handed to the
// node as NOTIFY_SOCKET.
class NotifySocket {
 public:
  explicit NotifySocket(std::string p) : path(std::move(p)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << path;
  }
  ~NotifySocket() { ::close(fd_); }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  // The first message holding `what`, waiting for messages up to `timeout`; "" none.
  std::string awaitContaining(const std::string& what, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 1))) <= 0) continue;
      char buf[4096];
      const auto n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) continue;
      std::string msg(buf, static_cast<size_t>(n));
      received += msg + "\n---\n";
      if (msg.find(what) != std::string::npos) return msg;
    }
    return "";
  }

  const std::string path;
  std::string received;  // everything so far, for failure messages

 private:
  int fd_ = -1;
};

// Regression: "today a dead node looks alive for three intervals". The node's lease has a
// TTL of its own (15 s), so an interval of 10 minutes changes nothing; its heartbeat, put
// once on that lease, names it and goes with it.
TEST_F(Nodes, ADeadNodeIsDownWithinThirtySecondsWhateverTheInterval) {
  nodeInterval = "10m";
  startNode("n1");
  auto revs = pushTo("n1", fileDecl(1, "one"));
  ASSERT_TRUE(awaitApplied("n1", revs.at("n1")));
  const auto beat = client->getPrefix(heartbeatKey(keys, "n1"));
  ASSERT_EQ(beat.kvs.size(), 1u) << "no heartbeat";
  const auto heartbeat = decodeHeartbeat(beat.kvs[0].value, "heartbeat");
  EXPECT_EQ(heartbeat.pid, nodes["n1"].pid);
  EXPECT_NE(heartbeat.lease, 0);
  EXPECT_EQ(beat.kvs[0].lease, heartbeat.lease) << "the heartbeat is on the lease it names";
  const auto onLease = client->getPrefix(keys.status("n1"));
  ASSERT_EQ(onLease.kvs.size(), 1u);
  EXPECT_EQ(onLease.kvs[0].lease, heartbeat.lease);
  EXPECT_EQ(decodeStatus(onLease.kvs[0].value, "status").lease, heartbeat.lease);

  stopNode("n1", SIGKILL);  // no goodbye
  const auto killed = Clock::now();
  ASSERT_TRUE(awaitStatus(
      "n1", [](const auto& s) { return !s.has_value(); }, 30s));
  EXPECT_LT(Clock::now() - killed, 25s);
  EXPECT_GE(Clock::now() - killed, 5s) << "gone before its lease could expire";
  EXPECT_FALSE(client->get(heartbeatKey(keys, "n1"))) << "the heartbeat outlived its lease";

  Result st = status({"--json"});
  EXPECT_EQ(st.code, 1) << st.out << st.err;
  const nlohmann::json row = st.json().at("nodes").at(0);
  EXPECT_EQ(row.at("state"), "down") << row.dump();
  EXPECT_EQ(row.at("applied_serial"), 1) << row.dump();
  // LAST SEEN of a down node: when it last put its status (the seen copy).
  const auto seen = decodeStatus(client->get(keys.seen("n1"))->value, "seen");
  EXPECT_EQ(row.at("last_seen_ms"), seen.publishedAtMs) << row.dump();
}

// Issue 13: an idle node writes nothing to etcd. Its lease is renewed with keep-alives
// (which are no writes: etcd's revision stays), and its status is put only when it changes
// materially — cycles that find nothing to do change only the cycle number and times.
TEST_F(Nodes, AnIdleNodeWritesNothingToEtcdYetStaysUpAndAChangeIsWrittenAtOnce) {
  startNode("n1");  // --interval 1s: a cycle every second
  auto revs = pushTo("n1", fileDecl(1, "one"));
  ASSERT_TRUE(awaitApplied("n1", revs.at("n1")));
  // The cycle after the one that applied it has other counts (all unchanged): let it pass.
  const auto cycles = [&] { return countOf(slurp(nodes["n1"].log), kCycleLine); };
  ASSERT_TRUE(awaitLog("n1", kCycleLine, cycles() + 2));

  const auto before = client->getPrefix(keys.nodesPrefix()).revision;
  const auto statusBefore = client->getPrefix(keys.status("n1"));
  ASSERT_EQ(statusBefore.kvs.size(), 1u);
  // Past the lease's TTL (15 s): only keep-alives keep the status there.
  const auto idleFrom = Clock::now();
  ASSERT_TRUE(awaitLog("n1", kCycleLine, cycles() + 16, 40s));
  ASSERT_GT(Clock::now() - idleFrom, fleet::kHeartbeatTtl);
  const auto idle = client->getPrefix(keys.status("n1"));
  EXPECT_EQ(idle.revision, before) << "an idle node wrote to etcd:\n" << slurp(nodes["n1"].log);
  ASSERT_EQ(idle.kvs.size(), 1u) << "its lease expired while it idled";
  EXPECT_EQ(idle.kvs[0].modRevision, statusBefore.kvs[0].modRevision);
  Result up = status({"--json"});
  EXPECT_EQ(up.code, 0) << up.out << up.err;
  EXPECT_EQ(up.json().at("nodes").at(0).at("state"), "converged") << up.out;

  // A change is written at the next cycle: a resource that fails (its file is a
  // directory now, which mesh-host never deleted) ...
  fs::remove(nodes["n1"].root + "/etc/app.conf");
  fs::create_directories(nodes["n1"].root + "/etc/app.conf/inside");
  ASSERT_TRUE(awaitStatus("n1", [](const auto& s) { return s && s->failed > 0; }));
  EXPECT_GT(client->getPrefix(keys.nodesPrefix()).revision, before);
  EXPECT_EQ(statusOf("n1")->failing.at(0).first, "app.config");
  EXPECT_EQ(decodeStatus(client->get(keys.seen("n1"))->value, "seen").failed,
            statusOf("n1")->failed)
      << "the seen copy is written with it";
  // ... and a new push.
  fs::remove_all(nodes["n1"].root + "/etc/app.conf");
  auto revs2 = pushTo("n1", fileDecl(2, "two"));
  ASSERT_TRUE(awaitStatus("n1", [&](const auto& s) {
    return s && s->serial == 2 && s->revision >= revs2.at("n1") && s->failed == 0;
  }));
  EXPECT_EQ(slurp(nodes["n1"].root + "/etc/app.conf"), "two");
}

// Issue 13: a node whose agent stops (SIGTERM) revokes its lease: its status and heartbeat
// are gone before the agent exits, and it reads as down at once.
TEST_F(Nodes, AStoppedNodeIsDownAtOnce) {
  startNode("n1");
  auto revs = pushTo("n1", fileDecl(1, "one"));
  ASSERT_TRUE(awaitApplied("n1", revs.at("n1")));
  ASSERT_TRUE(client->get(heartbeatKey(keys, "n1")));
  stopNode("n1", SIGTERM);  // returns once the agent has exited
  EXPECT_FALSE(client->get(keys.status("n1")));
  EXPECT_FALSE(client->get(heartbeatKey(keys, "n1")));
  Result st = status({"--json"});
  EXPECT_EQ(st.code, 1) << st.out << st.err;
  EXPECT_EQ(st.json().at("nodes").at(0).at("state"), "down") << st.out;
  EXPECT_EQ(st.json().at("nodes").at(0).at("applied_serial"), 1) << st.out;
}

// Regressions: "systemctl start mesh-host blocks until the first cycle ends, so a first
// cycle waiting for a restart slot keeps the agent activating up to the slot give-up", and
// "after an agent restart a node shows 'applied revision 0 (serial -)' until its first
// cycle ends … although it runs the previous declaration".
TEST_F(Nodes, ReadyAndShowingWhatItAppliedWhileItsFirstCycleWaitsForARestartSlot) {
  const std::string bundle = serviceBundle();
  startNode("n1");
  auto revs = pushTo("n1", serviceDecl(1, "one", bundle), {"--max-parallel-restarts", "1"});
  ASSERT_TRUE(awaitApplied("n1", revs.at("n1")));
  const auto applied = statusOf("n1");
  ASSERT_TRUE(applied);
  stopNode("n1", SIGTERM);

  // Drift that the first cycle repairs with a restart (restart-on app.config), for which
  // it must wait: the only slot is held.
  std::ofstream(nodes["n1"].root + "/etc/app.conf") << "drifted";
  const std::string slot = keys.restartSlots("app.service") + "0";
  const auto blocker = client->grantLease(60);
  ASSERT_TRUE(client->txnPutIfAbsent(slot, "blocker pid 1", blocker));

  NotifySocket notify(work + "/notify.sock");
  startNode("n1", {"NOTIFY_SOCKET=" + notify.path});
  const std::string ready = notify.awaitContaining("READY=1", 20s);
  ASSERT_NE(ready, "") << "no READY=1; got:\n" << notify.received << slurp(nodes["n1"].log);
  EXPECT_NE(ready.find("STATUS=watching"), std::string::npos) << ready;
  // The first cycle cannot have ended: the slot it needs is still the blocker's.
  EXPECT_EQ(client->get(slot)->value, "blocker pid 1");
  ASSERT_TRUE(awaitStatus("n1", [&](const auto& s) { return s && s->pid == nodes["n1"].pid; }));
  const auto starting = statusOf("n1");
  EXPECT_EQ(starting->cycle, applied->cycle) << "published after a cycle, not at start";
  EXPECT_EQ(starting->revision, applied->revision);
  EXPECT_EQ(starting->serial, 1);
  EXPECT_EQ(starting->declarationDigest, applied->declarationDigest);
  EXPECT_EQ(starting->generation, applied->generation);

  client->revoke(blocker);  // the slot frees: the first cycle restarts and ends
  ASSERT_TRUE(awaitStatus("n1", [&](const auto& s) {
    return s && s->pid == nodes["n1"].pid && s->cycle > applied->cycle;
  }));
  EXPECT_EQ(statusOf("n1")->failed, 0) << slurp(nodes["n1"].log);
  EXPECT_EQ(slurp(nodes["n1"].root + "/etc/app.conf"), "one");
}

// Regression: "--max-parallel-restarts 1 can be exceeded when the agent holding a slot dies
// mid-restart (the slot's 10 s lease expires while the service is still restarting)". The
// slot outlives its holder (the slot bound, 90 s), and the node's next agent takes it over
// or frees it once its first cycle has brought the service back.
TEST_F(Nodes, ASlotOutlivesItsHolderDyingMidRestartUntilItsNextAgentIsDone) {
  const std::string bundle = serviceBundle("2");  // ready 2 s after it starts
  for (const char* n : {"n1", "n2"}) startNode(n);
  auto revs = pushTo("n1,n2", serviceDecl(1, "one", bundle));
  for (const auto& [node, rev] : revs) ASSERT_TRUE(awaitApplied(node, rev));

  const std::string slot = keys.restartSlots("app.service") + "0";
  const pid_t firstAgent = nodes["n1"].pid;
  auto rev1 = pushTo("n1", serviceDecl(2, "two", bundle), {"--max-parallel-restarts", "1"});
  ASSERT_TRUE(awaitLog("n1", "restart slot " + slot + " taken", 1));
  stopNode("n1", SIGKILL);  // mid-restart: its service is 2 s from ready
  const auto held = client->get(slot);
  ASSERT_TRUE(held) << "the slot went with its holder";
  EXPECT_EQ(held->value, fmt::format("n1 pid {}", firstAgent));

  // n2 must wait for it, though n1's agent is gone.
  auto rev2 = pushTo("n2", serviceDecl(2, "two", bundle), {"--max-parallel-restarts", "1"});
  startNode("n1");  // its next agent: takes the slot over or frees it after its first cycle
  ASSERT_TRUE(awaitApplied("n1", rev1.at("n1")));
  ASSERT_TRUE(awaitApplied("n2", rev2.at("n2")));
  EXPECT_EQ(statusOf("n2")->failed, 0) << slurp(nodes["n2"].log);

  // n2's restart began only once n1's service was ready again.
  const auto runs = startsAndReadies();
  const auto& n1 = runs.at(nodes["n1"].root);
  const auto& n2 = runs.at(nodes["n2"].root);
  // n1: its first start, the restart cut short with its agent, and the one its next agent
  // made (the restart it still owed) — or the cut one became ready.
  ASSERT_GE(n1.size(), 2u) << slurp(shared);
  ASSERT_EQ(n2.size(), 2u) << slurp(shared);
  ASSERT_GT(n1.back().second, 0) << "n1's restart never got ready:\n" << slurp(shared);
  EXPECT_GT(n2[1].first, n1.back().second) << "n2 restarted while n1 was still restarting:\n"
                                           << slurp(shared);
  EXPECT_FALSE(client->get(slot)) << "a slot was left behind: " << client->get(slot)->value;
}

// `mesh-host pause` on a fleet node: its status says paused (why, who, since), the
// next push is accepted and kept but not applied, `fleet status` shows the node
// `paused` with its reason; `resume` applies the kept push at once.
TEST_F(Nodes, APausedNodeShowsPausedAndAppliesTheKeptPushOnResume) {
  startNode("n1");
  auto rev1 = pushTo("n1", fileDecl(1, "one"));
  ASSERT_TRUE(awaitApplied("n1", rev1.at("n1")));
  const auto& n = nodes["n1"];
  const std::vector<std::string> where = {"--root", n.root, "--state-dir", n.stateDir};
  auto cli = [&](std::vector<std::string> args) {
    args.insert(args.begin(), MESH_HOST_BIN);
    args.insert(args.end(), where.begin(), where.end());
    return runCommand(args);
  };
  Result paused = cli({"pause", "--reason", "kernel upgrade"});
  ASSERT_EQ(paused.code, 0) << paused.out << paused.err;
  ASSERT_TRUE(awaitStatus("n1", [](const std::optional<NodeStatus>& s) {
    return s && s->paused && s->paused->reason == "kernel upgrade";
  }));
  const auto before = *statusOf("n1");
  EXPECT_EQ(before.paused->uid, static_cast<int64_t>(::getuid()));
  EXPECT_FALSE(before.paused->user.empty());
  EXPECT_GT(before.paused->sinceMs, 0);

  auto rev2 = pushTo("n1", fileDecl(2, "two"));
  ASSERT_TRUE(awaitStatus(
      "n1", [](const std::optional<NodeStatus>& s) { return s && s->paused && s->pending == 1; }));
  const auto kept = *statusOf("n1");
  EXPECT_EQ(kept.serial, 1) << "a push applied while paused";
  EXPECT_EQ(kept.cycle, before.cycle);
  EXPECT_EQ(kept.declarationDigest, before.declarationDigest);
  EXPECT_EQ(slurp(n.root + "/etc/app.conf"), "one");

  Result st = status({"--json"});
  const nlohmann::json row = st.json().at("nodes").at(0);
  EXPECT_EQ(row.at("state"), "paused") << st.out;
  EXPECT_EQ(row.at("paused").at("reason"), "kernel upgrade") << st.out;
  EXPECT_EQ(row.at("pending"), 1) << st.out;
  EXPECT_EQ(st.json().at("summary").at("paused"), 1) << st.out;
  Result text = status();
  EXPECT_NE(text.out.find(" paused "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("n1: paused by "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("kernel upgrade; 1 change(s) waiting"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("n1: behind: applied serial 1"), std::string::npos) << text.out;

  Result resumed = cli({"resume"});
  ASSERT_EQ(resumed.code, 0) << resumed.out << resumed.err;
  ASSERT_TRUE(awaitStatus("n1", [&](const std::optional<NodeStatus>& s) {
    return s && !s->paused && s->serial == 2 && s->revision >= rev2.at("n1");
  }));
  EXPECT_EQ(slurp(n.root + "/etc/app.conf"), "two");
  EXPECT_EQ(statusOf("n1")->pending, 0);
}

// Issue 31: `fleet push --each DIR` gives each real node its own text in one push (two
// nodes share one text naming {node} and {cluster}, the third has its own): each applies
// what it was given, substituted as it sees itself, and the push is one history record.
TEST_F(Nodes, EachGivesEveryNodeItsOwnTextInOnePush) {
  for (const char* n : {"n1", "n2", "n3"}) startNode(n);
  const std::string dir = work + "/each";
  fs::create_directories(dir);
  const std::string shared = fileDecl(1, "I am {node} in {cluster}");
  std::ofstream(dir + "/n1.toml") << shared;
  std::ofstream(dir + "/n2.toml") << fileDecl(1, "n2 has its own");
  std::ofstream(dir + "/n3.toml") << shared;
  Result r = push({"--each", dir, "--wait", "20s", "--json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const auto& n : r.json().at("nodes")) EXPECT_EQ(n.at("outcome"), "applied") << n.dump();

  EXPECT_EQ(slurp(nodes["n1"].root + "/etc/app.conf"), "I am n1 in " + cluster);
  EXPECT_EQ(slurp(nodes["n2"].root + "/etc/app.conf"), "n2 has its own");
  EXPECT_EQ(slurp(nodes["n3"].root + "/etc/app.conf"), "I am n3 in " + cluster);
  EXPECT_EQ(statusOf("n1")->declarationDigest, Digest::ofBytes(shared).str());
  EXPECT_EQ(statusOf("n2")->serial, 1);

  Result h = runCommand(fleetArgv("history", {"--json"}));
  ASSERT_EQ(h.code, 0) << h.err;
  const auto pushes = h.json().at("pushes");
  ASSERT_EQ(pushes.size(), 1u) << h.out;
  EXPECT_EQ(pushes[0].at("texts"), 2);
  EXPECT_EQ(pushes[0].at("outcomes").at("applied"), 3) << h.out;

  Result st = status({"--json"});
  EXPECT_EQ(st.code, 0) << st.out << st.err;
  for (const auto& row : st.json().at("nodes")) EXPECT_EQ(row.at("state"), "converged") << row;
}

// Issue 31: a rollout on real agents. A good push walks all waves, each node healthy once
// it has applied it and nothing fails (these nodes run no service).
TEST_F(Nodes, ARolloutOfAGoodPushWalksAllWaves) {
  for (const char* n : {"n1", "n2", "n3"}) startNode(n);
  for (const auto& [node, rev] : pushTo("n1,n2,n3", fileDecl(1, "one")))
    ASSERT_TRUE(awaitApplied(node, rev));
  Result r = push({"--nodes", "n*", "--canary", "1", "--wave", "1", "--min-healthy", "200ms",
                   "--healthy-deadline", "30s", declare(fileDecl(2, "two"), "two.toml")});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const auto& [name, n] : nodes) EXPECT_EQ(slurp(n.root + "/etc/app.conf"), "two") << name;
  EXPECT_NE(r.out.find("wave 1 of 3 (canary): n1 healthy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rollout of serial 2: wave 3 of 3, done\n"), std::string::npos) << r.out;
}

// The issue's incident, with real agents: a change that makes the service crash a moment
// after it came up (ready, then exit 3; Restart=always brings it back) halts the rollout at
// the canary — its agent publishes the crash restart between cycles — the other nodes never
// get it, and --auto-revert gives the canary its previous declaration back (serial 3).
TEST_F(Nodes, ARolloutWhoseServiceCrashesHaltsAtTheCanaryAndAutoRevertRestoresIt) {
  const std::string bundle = scriptBundle(
      "crashy", fmt::format("echo \"start $1 $(date +%s%N)\" >> {0}\n"
                            "systemd-notify --no-block --ready\n"
                            "if [ \"$(cat $1/etc/app.conf)\" = two ]; then sleep 0.5; exit 3; fi\n"
                            "exec sleep 100000\n",
                            shared));
  const auto decl = [&](int64_t serial, const std::string& config) {
    return fmt::format(R"(serial = {0}

[module.app.file.config]
path = "/etc/app.conf"
content = "{1}"

[module.app.process.svc]
bundle = "{2}"
restart-on = ["app.config"]
unit = {{ Type = "notify", NotifyAccess = "all", Restart = "always", RestartSec = "1", ExecStart = "{{bundle}}/bin/svc {{root}}" }}
)",
                       serial, config, bundle);
  };
  for (const char* n : {"n1", "n2", "n3"}) startNode(n);
  for (const auto& [node, rev] : pushTo("n1,n2,n3", decl(1, "one")))
    ASSERT_TRUE(awaitApplied(node, rev));

  Result r =
      push({"--nodes", "n*", "--canary", "1", "--wave", "1", "--min-healthy", "5s",
            "--healthy-deadline", "60s", "--auto-revert", declare(decl(2, "two"), "two.toml")});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("halted in wave 1 of 3 (canary): n1 "), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("not pushed to n2, n3"), std::string::npos) << r.out;
  EXPECT_NE((r.out + r.err).find("n1"), std::string::npos) << r.out << r.err;
  // The nodes of later waves were never written: they run serial 1 as they did.
  for (const char* n : {"n2", "n3"})
    EXPECT_EQ(slurp(nodes.at(n).root + "/etc/app.conf"), "one") << n;
  // The canary gets its previous declaration back and applies it.
  EXPECT_TRUE(awaitFile(
      nodes.at("n1").root + "/etc/app.conf", [](const std::string& text) { return text == "one"; },
      std::chrono::seconds(30)))
      << slurp(nodes.at("n1").log);
  Result st = runCommand(fleetArgv("rollout", {"status", "--trust", operatorKey.text()}));
  EXPECT_EQ(st.code, 1) << st.out << st.err;
  EXPECT_NE(st.out.find("reverted"), std::string::npos) << st.out;
  std::printf("---- fleet push --canary (real agents, halted):\n%s%s---- fleet rollout status:\n%s",
              r.out.c_str(), r.err.c_str(), st.out.c_str());
}

// The operator's terminal closes mid-rollout (its `fleet push --canary` killed once the
// second wave was pushed): `fleet rollout resume` takes it over from the record in etcd and
// every real node ends on serial 2.
TEST_F(Nodes, ARolloutWhoseDriverIsKilledIsResumedAndEveryNodeConverges) {
  for (const char* n : {"n1", "n2", "n3"}) startNode(n);
  for (const auto& [node, rev] : pushTo("n1,n2,n3", fileDecl(1, "one")))
    ASSERT_TRUE(awaitApplied(node, rev));
  const int64_t from = client->getPrefix(keys.nodesPrefix()).revision;
  Child driver = start(fleetArgv(
      "push", {"--key", keyFile, "--nodes", "n*", "--canary", "1", "--wave", "1", "--min-healthy",
               "1s", "--healthy-deadline", "60s", declare(fileDecl(2, "two"), "two.toml")}));
  ASSERT_TRUE(client->watch(
      keys.declaration("n2"), from + 1, [](const std::vector<EtcdEvent>&) { return false; },
      std::chrono::seconds(60)))
      << "the second wave was never pushed";
  ASSERT_EQ(::kill(driver.pid, SIGKILL), 0);
  finish(driver);
  EXPECT_EQ(slurp(nodes.at("n3").root + "/etc/app.conf"), "one") << "wave 3 before its turn";

  Result r = runCommand(fleetArgv("rollout", {"resume", "--key", keyFile}));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("resuming in wave 2 of 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rollout of serial 2: wave 3 of 3, done\n"), std::string::npos) << r.out;
  for (const auto& [name, n] : nodes)
    EXPECT_TRUE(awaitFile(
        n.root + "/etc/app.conf", [](const std::string& text) { return text == "two"; },
        std::chrono::seconds(30)))
        << name;
}

}  // namespace
}  // namespace mesh::fleet::test
