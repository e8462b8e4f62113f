// A mesh of real nodes through a real etcd: each node is a `mesh-host run --etcd`
// process with its own --root and --state-dir (builtin supervisor), the operator
// uses `mesh-host fleet push` and `fleet status`. Waiting is on etcd watches of
// the nodes' status keys, or on the nodes' own logs, never on a fixed sleep.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "fleet_fixture.hh"
#include "test_etcd.hh"
#include "trust/signing.hh"

namespace mesh::fleet::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int64_t countOf(const std::string& text, const std::string& what) {
  int64_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

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
    const std::vector<std::string> argv = {MESH_HOST_BIN,  "run",
                                           "--etcd",       url,
                                           "--cluster",    cluster,
                                           "--node",       name,
                                           "--root",       n.root,
                                           "--state-dir",  n.stateDir,
                                           "--trust",      operatorKey.text(),
                                           "--interval",   "1s",
                                           "--splay",      "0",
                                           "--supervisor", "builtin",
                                           "--blobs",      blobs};
    n.pid = ::fork();
    if (n.pid == 0) {
      for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
      int out = ::open(n.log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      ::dup2(out, 1);
      ::dup2(out, 2);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    return nodes[name] = n;
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
    const std::string key = keys.status(node);
    const auto deadline = Clock::now() + timeout;
    auto range = client->getPrefix(key);
    std::optional<NodeStatus> now;
    for (const auto& kv : range.kvs)
      if (kv.key == key) now = decodeStatus(kv.value, key);
    if (ok(now)) return true;
    int64_t from = range.revision + 1;
    bool done = false;
    while (!done && Clock::now() < deadline) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      client->watch(
          key, from,
          [&](const std::vector<EtcdEvent>& events) {
            for (const auto& e : events) {
              from = e.kv.modRevision + 1;
              std::optional<NodeStatus> s;
              if (e.type == EtcdEvent::Type::Put) s = decodeStatus(e.kv.value, key);
              if (ok(s)) done = true;
            }
            return !done;
          },
          std::max(left, 1ms));
    }
    EXPECT_TRUE(done) << node << ": status not as expected within " << timeout.count()
                      << " ms; log:\n"
                      << readAll(nodes[node].log);
    return done;
  }

  // Until the node's status shows a cycle of a declaration at revision >= rev.
  bool awaitApplied(const std::string& node, int64_t rev) {
    return awaitStatus(node, [rev](const std::optional<NodeStatus>& s) {
      return s && s->revision >= rev && s->cycle > 0;
    });
  }

  // Until the node's log holds `n` lines containing `what` (polls the file: the
  // agent writes it, there is no event to wait on from here).
  bool awaitLog(const std::string& node, const std::string& what, int64_t n,
                std::chrono::milliseconds timeout = 20s) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      if (countOf(readAll(nodes[node].log), what) >= n) return true;
      std::this_thread::sleep_for(20ms);
    }
    ADD_FAILURE() << node << ": fewer than " << n << " lines with \"" << what << "\" in "
                  << timeout.count() << " ms; log:\n"
                  << readAll(nodes[node].log);
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
  std::string serviceBundle() {
    const std::string src = work + "/bundle-src";
    fs::create_directories(src + "/bin");
    std::ofstream(src + "/bin/svc") << fmt::format(
        "#!/bin/sh\n"
        "echo \"start $1 $(date +%s%N)\" >> {0}\n"
        "sleep 0.4\n"
        "echo \"ready $1 $(date +%s%N)\" >> {0}\n"
        "systemd-notify --no-block --ready\n"
        "exec sleep 100000\n",
        shared);
    fs::permissions(src + "/bin/svc", fs::perms::owner_all | fs::perms::group_read |
                                          fs::perms::group_exec | fs::perms::others_read |
                                          fs::perms::others_exec);
    Result tar = runCommand({"tar", "-C", src, "-cf", work + "/svc.tar", "bin"});
    EXPECT_EQ(tar.code, 0) << tar.err;
    Result add = runCommand({MESH_HOST_BIN, "blob", "add", work + "/svc.tar", "--to", blobs});
    EXPECT_EQ(add.code, 0) << add.out << add.err;
    std::string digest = add.out;
    while (!digest.empty() && (digest.back() == '\n' || digest.back() == ' ')) digest.pop_back();
    return digest.substr(digest.rfind(' ') + 1);
  }

  static std::string fileDecl(int64_t serial, const std::string& content) {
    return fmt::format(
        "serial = {}\n\n[module.app.file.config]\npath = \"/etc/app.conf\"\ncontent = \"{}\"\n",
        serial, content);
  }

  static std::string serviceDecl(int64_t serial, const std::string& config,
                                 const std::string& bundle) {
    return fmt::format(R"(serial = {0}

[module.app.file.config]
path = "/etc/app.conf"
content = "{1}"

[module.app.process.svc]
bundle = "{2}"
restart-on = ["app.config"]
unit = {{ Type = "notify", NotifyAccess = "all", ExecStart = "{{bundle}}/bin/svc {{root}}" }}
)",
                       serial, config, bundle);
  }

  // (start, ready) times of each service start, per node root, from the shared log.
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> startsAndReadies() {
    std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> out;
    std::istringstream in(readAll(shared));
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
  std::map<std::string, NodeProcess> nodes;
  int pushes = 0;
};

TEST_F(Nodes, PushToAllConvergesEverywhereAndPushToOneChangesOnlyIt) {
  for (const char* n : {"n1", "n2", "n3"}) startNode(n);
  auto revs = pushTo("n1,n2,n3", fileDecl(1, "one"));
  ASSERT_EQ(revs.size(), 3u);
  for (const auto& [node, rev] : revs) ASSERT_TRUE(awaitApplied(node, rev));
  for (const auto& [node, n] : nodes) EXPECT_EQ(readAll(n.root + "/etc/app.conf"), "one");

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
  EXPECT_EQ(readAll(nodes["n2"].root + "/etc/app.conf"), "two");
  EXPECT_EQ(readAll(nodes["n1"].root + "/etc/app.conf"), "one");
  EXPECT_EQ(readAll(nodes["n3"].root + "/etc/app.conf"), "one");
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

TEST_F(Nodes, AKilledNodeShowsDownOnceItsLeaseExpires) {
  for (const char* n : {"n1", "n2", "n3"}) startNode(n);
  auto revs = pushTo("n1,n2,n3", fileDecl(1, "one"));
  for (const auto& [node, rev] : revs) ASSERT_TRUE(awaitApplied(node, rev));

  stopNode("n3", SIGKILL);  // no goodbye: only the lease (3 intervals = 3 s) tells
  const auto killed = Clock::now();
  ASSERT_TRUE(awaitStatus(
      "n3", [](const auto& s) { return !s.has_value(); }, 15s));
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
  evil.serial = 2;
  const int64_t rev = client->put(keys.declaration("n2"), encodePushed(evil));
  ASSERT_TRUE(awaitStatus(
      "n2", [rev](const auto& s) { return s && s->refused && s->refused->revision == rev; }));
  EXPECT_NE(statusOf("n2")->refused->reason.find("does not match"), std::string::npos)
      << statusOf("n2")->refused->reason;
  EXPECT_EQ(readAll(nodes["n2"].root + "/etc/app.conf"), "one");

  Result st = status({"--json"});
  EXPECT_EQ(st.code, 1) << st.out << st.err;
  const nlohmann::json stNodes = st.json().at("nodes");
  for (const auto& row : stNodes)
    EXPECT_EQ(row.at("state"), row.at("node") == "n2" ? "refused" : "converged") << row.dump();

  // A properly signed push afterwards is accepted and clears the refusal.
  auto good = pushTo("n2", fileDecl(3, "three"));
  ASSERT_TRUE(awaitStatus(
      "n2", [&](const auto& s) { return s && s->revision >= good.at("n2") && !s->refused; }));
  EXPECT_EQ(readAll(nodes["n2"].root + "/etc/app.conf"), "three");
}

TEST_F(Nodes, WithEtcdAwayServicesKeepRunningUnrestartedAndAPushAfterConverges) {
  const std::string bundle = serviceBundle();
  for (const char* n : {"n1", "n2", "n3"}) startNode(n);
  auto revs = pushTo("n1,n2,n3", serviceDecl(1, "one", bundle));
  for (const auto& [node, rev] : revs) ASSERT_TRUE(awaitApplied(node, rev));
  ASSERT_EQ(startsAndReadies().size(), 3u) << readAll(shared);

  Result pause = runCommand({::mesh::test::etcdScript(), "pause", etcdDir()});
  ASSERT_EQ(pause.code, 0) << pause.err;
  // Three more cycles on every node while etcd is away (interval 1 s).
  std::map<std::string, int64_t> cycles;
  for (const auto& [name, n] : nodes)
    cycles[name] = countOf(readAll(n.log), "unchanged, 0 removed");
  for (const auto& [name, n] : nodes)
    ASSERT_TRUE(awaitLog(name, "unchanged, 0 removed", cycles[name] + 3));
  Result resume = runCommand({::mesh::test::etcdScript(), "resume", etcdDir()});
  ASSERT_EQ(resume.code, 0) << resume.err;

  for (const auto& [root, starts] : startsAndReadies())
    EXPECT_EQ(starts.size(), 1u) << root << " restarted while etcd was away:\n" << readAll(shared);
  for (const auto& [name, n] : nodes) {
    EXPECT_EQ(countOf(readAll(n.log), "restarted app.service"), 0) << readAll(n.log);
    EXPECT_NE(readAll(n.log).find("stays in force"), std::string::npos) << readAll(n.log);
  }

  auto revs2 = pushTo("n1,n2,n3", serviceDecl(2, "two", bundle));
  for (const auto& [node, rev] : revs2) ASSERT_TRUE(awaitApplied(node, rev));
  for (const auto& [name, n] : nodes) EXPECT_EQ(readAll(n.root + "/etc/app.conf"), "two");
  for (const auto& [root, starts] : startsAndReadies())
    EXPECT_EQ(starts.size(), 2u) << root << ": the config change restarts it exactly once:\n"
                                 << readAll(shared);
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
    ASSERT_EQ(starts.size(), 2u) << root << ":\n" << readAll(shared);
    ASSERT_GT(starts[1].second, starts[1].first) << "no ready time:\n" << readAll(shared);
    restarts.push_back(starts[1]);
  }
  std::sort(restarts.begin(), restarts.end());
  for (size_t i = 1; i < restarts.size(); ++i)
    EXPECT_GT(restarts[i].first, restarts[i - 1].second)
        << "restart " << i << " started before the one before it was ready:\n"
        << readAll(shared);
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
  EXPECT_EQ(readAll(nodes["n1"].root + "/etc/app.conf"), "one");
  EXPECT_NE(readAll(nodes["n1"].log)
                .find("cached pushed declaration (revision " + std::to_string(revs.at("n1"))),
            std::string::npos)
      << readAll(nodes["n1"].log);

  Result resume = runCommand({::mesh::test::etcdScript(), "resume", etcdDir()});
  ASSERT_EQ(resume.code, 0) << resume.err;
  ASSERT_TRUE(awaitApplied("n1", revs.at("n1")));
  auto next = pushTo("n1", fileDecl(2, "two"));
  ASSERT_TRUE(awaitApplied("n1", next.at("n1")));
  EXPECT_EQ(readAll(nodes["n1"].root + "/etc/app.conf"), "two");
}

TEST_F(Nodes, ANodeBackAfterACompactionReadsItsDeclarationAgain) {
  startNode("n1");
  auto revs = pushTo("n1", fileDecl(1, "one"));
  ASSERT_TRUE(awaitApplied("n1", revs.at("n1")));
  stopNode("n1", SIGTERM);

  pushTo("n1", fileDecl(2, "two"));
  auto last = pushTo("n1", fileDecl(3, "three"));
  // The revisions after the one n1 saw are compacted away: its resumed watch
  // cannot replay them, so it must read the key again.
  client->compact(last.at("n1"));
  startNode("n1");
  ASSERT_TRUE(awaitApplied("n1", last.at("n1")));
  EXPECT_EQ(readAll(nodes["n1"].root + "/etc/app.conf"), "three");
  EXPECT_NE(readAll(nodes["n1"].log).find("compacted"), std::string::npos)
      << readAll(nodes["n1"].log);
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
  PushedDeclaration old;
  old.text = fileDecl(1, "one");
  old.signature = trust::signatureText(trust::OperatorKey::load(keyFile), old.text);
  old.serial = 1;
  const int64_t rev = client->put(keys.declaration("n1"), encodePushed(old));
  ASSERT_TRUE(awaitStatus(
      "n1", [rev](const auto& s) { return s && s->refused && s->refused->revision == rev; }));
  EXPECT_NE(statusOf("n1")->refused->reason.find("serial 1 is older than serial 2"),
            std::string::npos)
      << statusOf("n1")->refused->reason;
  EXPECT_EQ(readAll(nodes["n1"].root + "/etc/app.conf"), "two");
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

}  // namespace
}  // namespace mesh::fleet::test
