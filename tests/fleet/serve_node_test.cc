// A node's page in `mesh-host fleet serve` (issue 31.3), in a real headless Chromium over a
// real etcd: a real agent (`mesh-host run --etcd`) applies a push with a file whose diff may
// be shown, a sealed credential whose may never be, and a file that cannot be written; its
// report (fleet/report.hh) reaches etcd signed, and the page reached from its row shows
// what failed and why, the diff, the serials over time — the same after a reload. Also: the
// services of a status, the rollout card's counts, a staged rollout's line, and hostile
// bytes in a reason and a diff drawn as text.
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include "../support/child.hh"
#include "../support/raw_bytes.hh"
#include "fleet/report.hh"
#include "node_decls.hh"
#include "serve_fixture.hh"

namespace mesh::fleet::test {
namespace {

// The secret's bytes: never in etcd, never on a page.
constexpr const char* kSecretOld = "hunter2-old-credential";
constexpr const char* kSecretNew = "hunter2-new-credential";

class NodePage : public FleetServe {
 protected:
  void TearDown() override {
    if (agent_ > 0) {
      ::kill(agent_, SIGTERM);
      int status = 0;
      ::waitpid(agent_, &status, 0);
      agent_ = -1;
    }
    FleetServe::TearDown();
  }

  // A real agent for `node` (its key made by `key init`, enrolled with `fleet enroll`),
  // a cycle every second. Returns its public key.
  std::string startAgent(const std::string& node) {
    root_ = work + "/" + node;
    const std::string stateDir = root_ + "/var/lib/mesh-host";
    fs::create_directories(root_);
    Result init =
        runCommand({MESH_HOST_BIN, "key", "init", "--root", root_, "--state-dir", stateDir});
    EXPECT_EQ(init.code, 0) << init.err;
    const std::string key = init.out.substr(0, init.out.find('\n'));
    Result enrolled = runCommand(fleetArgv("enroll", {"--key", keyFile, node, key}));
    EXPECT_EQ(enrolled.code, 0) << enrolled.out << enrolled.err;
    log_ = work + "/" + node + ".log";
    agent_ = ::mesh::test::spawnChild({MESH_HOST_BIN,  "run",
                                       "--etcd",       url,
                                       "--cluster",    cluster,
                                       "--node",       node,
                                       "--root",       root_,
                                       "--state-dir",  stateDir,
                                       "--trust",      operatorKey.text(),
                                       "--interval",   "1s",
                                       "--splay",      "0",
                                       "--supervisor", "builtin"},
                                      log_, "", ::mesh::test::Output::Append);
    return key;
  }

  std::string seal(const std::string& key, const std::string& secret) {
    const std::string file = work + "/secret";
    std::ofstream(file) << secret;
    Result r = runCommand({MESH_HOST_BIN, "seal", "--to", key, file});
    EXPECT_EQ(r.code, 0) << r.err;
    std::string v = r.out;
    while (!v.empty() && v.back() == '\n') v.pop_back();
    return v;
  }

  static std::string decl(int64_t serial, const std::string& config, const std::string& sealed,
                          bool blocked) {
    std::string text = fmt::format(R"(serial = {}

[module.app.file.config]
path = "/etc/app.conf"
content = "{}"
mode = "0644"

[module.app.credential.token]
path = "/etc/app.token"
sealed = "{}"
)",
                                   serial, config, sealed);
    if (blocked)
      text += "\n[module.app.file.blocked]\npath = \"/etc/blocked\"\ncontent = \"x\\n\"\n";
    return text;
  }

  // The node's report in etcd once `ok` holds for it (bounded), checked by its signature.
  std::optional<NodeReport> awaitReport(const std::string& node,
                                        const std::function<bool(const NodeReport&)>& ok) {
    std::optional<NodeReport> got;
    waitFor(
        [&] {
          const auto v = client->get(reportKey(keys, node));
          if (!v) return false;
          got = decodeReport(v->value, "report");
          return ok(*got);
        },
        std::chrono::seconds(20));
    if (got && !ok(*got)) got.reset();
    return got;
  }

  std::string text(const std::string& selector) {
    return browser().run("const e = document.querySelector('" + selector +
                         "'); return e ? e.textContent : '';");
  }

  pid_t agent_ = -1;
  std::string root_, log_;
};

// Issue 31.3: from a failing node's row to its page, which shows the failing resource and
// why, what its last change did (with the diff of the file that may be shown, never the
// credential's), and its serials over time, read from etcd: a reload lands on the same page
// with the same. Its report is written once, not again while it fails the same way.
TEST_F(NodePage, FromARowToTheNodesPageWithTheFailureTheDiffAndNoSecretSurvivingAReload) {
  const std::string key = startAgent("n1");
  Result p1 = push({"--nodes", "n1", declare(decl(1, "one\\n", seal(key, kSecretOld), false))});
  ASSERT_EQ(p1.code, 0) << p1.err;
  ASSERT_TRUE(awaitReport("n1", [](const NodeReport& r) { return r.serial == 1; })) << slurp(log_);
  // Something stands where serial 2 wants a file: that resource fails, the rest applies.
  fs::create_directories(root_ + "/etc/blocked/inside");
  Result p2 = push({"--nodes", "n1", declare(decl(2, "two\\n", seal(key, kSecretNew), true))});
  ASSERT_EQ(p2.code, 0) << p2.err;
  const auto report = awaitReport("n1", [](const NodeReport& r) { return r.serial == 2; });
  ASSERT_TRUE(report) << slurp(log_);

  // In etcd: signed by the node, every outcome that was not unchanged, the file's diff, the
  // credential's none, no secret byte anywhere.
  const std::string value = client->get(reportKey(keys, "n1"))->value;
  EXPECT_EQ(checkNodeJson(value, trust::NodePublicKey::parse(key, "n1")), NodeSignature::Valid);
  for (const char* secret : {kSecretOld, kSecretNew})
    EXPECT_EQ(value.find(secret), std::string::npos) << "a secret in etcd: " << value;
  std::map<std::string, NodeReport::Outcome> byId;
  for (const auto& o : report->outcomes) byId[o.id] = o;
  ASSERT_EQ(byId.count("app.config"), 1u) << value;
  ASSERT_EQ(byId.count("app.token"), 1u) << value;
  ASSERT_EQ(byId.count("app.blocked"), 1u) << value;
  EXPECT_NE(byId["app.config"].diff.find("-one\n+two\n"), std::string::npos) << value;
  EXPECT_EQ(byId["app.token"].diff, "");
  EXPECT_EQ(byId["app.blocked"].outcome, "failed");
  const std::string reason = byId["app.blocked"].reason;
  EXPECT_NE(reason.find("in the way"), std::string::npos) << reason;
  ASSERT_EQ(report->applied.size(), 2u);
  EXPECT_EQ(report->applied[0].serial, 1);
  EXPECT_EQ(report->applied[1].serial, 2);

  // Failing the same way cycle after cycle (one a second) writes nothing more.
  const int64_t putAt = client->get(reportKey(keys, "n1"))->modRevision;
  const auto cycles = [&] { return countOf(slurp(log_), kCycleLine); };
  const int64_t seen = cycles();
  ASSERT_TRUE(waitFor([&] { return cycles() >= seen + 3; }, std::chrono::seconds(20)))
      << slurp(log_);
  EXPECT_EQ(client->get(reportKey(keys, "n1"))->modRevision, putAt)
      << "a node failing the same way put its report again";

  ASSERT_NO_FATAL_FAILURE(startServe());
  browser().go(page);
  ASSERT_TRUE(waitFor([&] { return states()["n1"] == "failing"; }, std::chrono::seconds(5)));
  browser().run("document.querySelector('tr[data-node=\"n1\"] a.node-link').click();");
  const auto onPage = [&] {
    return !text("#failed tr[data-failed=\"app.blocked\"]").empty() &&
           !text("#outcomes tr[data-diff=\"app.config\"]").empty();
  };
  ASSERT_TRUE(waitFor(onPage, std::chrono::seconds(5)))
      << browser().run("return document.body.innerText;");
  const auto check = [&] {
    EXPECT_EQ(browser().run("return location.pathname + location.search;"), "/node?name=n1");
    EXPECT_EQ(text("#node"), "n1");
    EXPECT_NE(text("#failed tr[data-failed=\"app.blocked\"]").find(reason), std::string::npos);
    EXPECT_NE(text("#outcomes tr[data-outcome=\"app.blocked\"]").find(reason), std::string::npos);
    EXPECT_NE(text("#outcomes tr[data-diff=\"app.config\"] pre").find("-one\n+two\n"),
              std::string::npos);
    EXPECT_EQ(text("#outcomes tr[data-diff=\"app.token\"]"), "") << "a credential's diff";
    EXPECT_FALSE(text("#outcomes tr[data-outcome=\"app.token\"]").empty());
    EXPECT_EQ(browser().run(
                  "return Array.from(document.querySelectorAll('#applied tr[data-applied]')).map("
                  "r => r.dataset.applied);"),
              json::parse(R"(["2","1"])"));
    EXPECT_EQ(
        browser().run("return Array.from(document.querySelectorAll('#pushes tr[data-pushed]')).map("
                      "r => r.dataset.pushed);"),
        json::parse(R"(["2","1"])"));
    // Up: last seen is its heartbeat (its lease, alive now), not when it put its status.
    EXPECT_NE(text("#last-seen").find("heartbeat "), std::string::npos) << text("#last-seen");
    const std::string all = browser().run("return document.documentElement.outerHTML;");
    for (const char* secret : {kSecretOld, kSecretNew})
      EXPECT_EQ(all.find(secret), std::string::npos) << "a secret on the page";
  };
  check();
  browser().run("location.reload();");
  ASSERT_TRUE(waitFor(
      [&] { return browser().run("return window.meshUpdates || 0;").get<int>() > 0 && onPage(); },
      std::chrono::seconds(5)));
  check();
  // A shared link lands there too.
  browser().go(page + "node?name=n1");
  ASSERT_TRUE(waitFor(onPage, std::chrono::seconds(5)));
  check();
  // MESH_NODE_SCREENSHOT=path writes a screenshot of the node page there (docs/fleet.md).
  if (const char* path = std::getenv("MESH_NODE_SCREENSHOT"))
    std::ofstream(path, std::ios::binary) << browser().screenshotPng();
}

// Issue 31.3: the services of a status (running, up since, restarts by mesh-host and by
// crash, health), a pause with what waits, and last seen: the heartbeat.
TEST_F(NodePage, ShowsTheServicesAndRestartsOfItsStatusAndWhatWaitsWhilePaused) {
  auto s = nodeStatus("web1", 1, 4);
  s.publishedAtMs -= 3 * 3600 * 1000;  // put 3 hours ago: an idle node writes nothing
  s.services = {{"app.svc", "app-svc.service", true, s.publishedAtMs - 60000, 2, 3, "unhealthy",
                 "exit 1: connection refused"},
                {"app.worker", "app-worker.service", false, 0, 1, 0, "", ""}};
  s.paused = NodeStatus::Pause{"db migration", "ops", 1000, s.publishedAtMs};
  s.pending = 3;
  publish(s, true);
  ASSERT_NO_FATAL_FAILURE(startServe());
  browser().go(page + "node?name=web1");
  ASSERT_TRUE(
      waitFor([&] { return !text("#service-table tbody").empty(); }, std::chrono::seconds(5)));
  const std::string svc = text("tr[data-service=\"app.svc\"]");
  for (const char* want : {"app-svc.service", "running", "unhealthy: exit 1: connection refused"})
    EXPECT_NE(svc.find(want), std::string::npos) << want << " in " << svc;
  EXPECT_EQ(
      browser().run("return Array.from(document.querySelectorAll('tr[data-service=\"app.svc\"] "
                    "td')).slice(4, 6).map(td => td.textContent);"),
      json::parse(R"(["2","3"])"));
  EXPECT_NE(text("tr[data-service=\"app.worker\"]").find("not running"), std::string::npos);
  // Last seen: its heartbeat (its lease is alive now), not when it last put its status.
  const std::string seen = text("#last-seen");
  EXPECT_TRUE(seen.starts_with("heartbeat ") && seen.ends_with("s ago")) << seen;
  EXPECT_NE(text("#pending-text").find("paused by ops"), std::string::npos);
  EXPECT_NE(text("#pending-text").find("db migration; 3 change(s) waiting"), std::string::npos);
  // A node etcd knows nothing of, and a name that is no node name.
  EXPECT_EQ(http("GET", page + "api/node?name=nobody").code, 200);
  EXPECT_EQ(json::parse(http("GET", page + "api/node?name=nobody").body).at("known"), false);
  const auto bad = http("GET", page + "api/node?name=..%2Fx");
  EXPECT_EQ(bad.code, 400);
  EXPECT_NE(bad.body.find("node"), std::string::npos) << bad.body;
}

// Issue 31.3: the rollout card said "1 of 1 applied it" above "0 applied · 1 failing" — the
// headline counted a node that applied the push and fails, the breakdown did not. Both
// count the same nodes now. And a staged rollout's state, when the view carries it, is one
// line of the card.
TEST_F(NodePage, TheRolloutCardsCountsAgreeAndAStagedRolloutIsOneLine) {
  auto s = nodeStatus("web1", 2, 5);
  s.failed = 1;
  s.failing = {{"app.svc", "ExecStart exited 1"}};
  publish(s, true);
  Result p = push({"--nodes", "web1", declare(declText(5))});
  ASSERT_EQ(p.code, 0) << p.err;
  publish(s, true);  // it has applied serial 5, and fails
  ASSERT_NO_FATAL_FAILURE(startServe());
  browser().go(page);
  ASSERT_TRUE(waitFor([&] { return states()["web1"] == "failing"; }, std::chrono::seconds(5)));
  EXPECT_EQ(text("#rollout-count"), "1 of 1");
  EXPECT_EQ(text("#rollout-breakdown"),
            "1 applied (0 ok, 1 failing) · 0 refused · 0 down · 0 pending");

  // The view with a staged rollout in it, as `fleet push --canary` leaves one.
  const json fleetView = json::parse(http("GET", page + "api/fleet").body);
  json staged = fleetView;
  staged["rollout"] = {
      {"serial", 5},
      {"state", "halted"},
      {"wave", 2},
      {"waves", 5},
      {"reason", "web-3 restarted web.service 4 times <script>window.pwned=1</script>"}};
  browser().run("window.meshShowFleet(" + staged.dump() + "); return null;");
  EXPECT_EQ(text("#rollout-state"),
            "serial 5: wave 2 of 5, halted: web-3 restarted web.service 4 times "
            "<script>window.pwned=1</script>");
  EXPECT_EQ(browser().run("return window.pwned === undefined;"), true);
  browser().run("window.meshShowFleet(" + fleetView.dump() + "); return null;");
  EXPECT_EQ(text("#rollout-state"), "") << "no rollout object, no line";
}

// Issue 31.3: a reason and a diff are bytes from outside (invalid UTF-8, ESC, CR, U+202E,
// markup): the node page draws them as text — no element made of them, no script run.
TEST_F(NodePage, HostileBytesInAReasonAndADiffAreDrawnAsText) {
  using mesh::test::nothingRaw;
  using mesh::test::Shown;
  const std::string bytes = "\xff\x1b[2K\r\xe2\x80\xae";
  const std::string markup = "<img src=x onerror=window.pwned=1><script>window.pwned=2</script>";
  auto s = nodeStatus("web1", 0, std::nullopt);
  s.failed = 1;
  s.failing = {{"m.bad", "crash " + bytes + markup}};
  publish(s, true);
  NodeReport r;
  r.node = "web1";
  r.cluster = cluster;
  r.cycle = 3;
  r.atMs = s.publishedAtMs;
  r.failed = 1;
  r.updated = 1;
  r.outcomes = {{"m.bad", "file", "failed", "crash " + bytes + markup, "", false, "", false},
                {"m.conf", "file", "updated", "declared", "9 bytes", false,
                 "--- a/etc/x\n+++ b/etc/x\n-" + bytes + "\n+" + markup + "\n", false}};
  carryHistory(r, std::nullopt);
  client->put(reportKey(keys, "web1"), signNodeJson(encodeReport(r), nodeKey("web1")));
  ASSERT_NO_FATAL_FAILURE(startServe());

  const auto api = http("GET", page + "api/node?name=web1");
  ASSERT_EQ(api.code, 200);
  EXPECT_TRUE(nothingRaw(api.body, Shown::Json)) << "/api/node";
  browser().go(page + "node?name=web1");
  ASSERT_TRUE(waitFor([&] { return !text("#outcomes tr[data-diff=\"m.conf\"]").empty(); },
                      std::chrono::seconds(5)))
      << browser().run("return document.body.innerText;");
  const std::string fixed = "\xef\xbf\xbd\x1b[2K\r\xe2\x80\xae";
  EXPECT_EQ(text("#outcomes tr[data-diff=\"m.conf\"] pre"),
            "--- a/etc/x\n+++ b/etc/x\n-" + fixed + "\n+" + markup + "\n");
  EXPECT_NE(text("#failed tr[data-failed=\"m.bad\"]").find("crash " + fixed + markup),
            std::string::npos);
  EXPECT_NE(text("#outcomes tr[data-outcome=\"m.bad\"]").find("crash " + fixed + markup),
            std::string::npos);
  EXPECT_EQ(browser().run("return window.pwned === undefined;"), true) << "a script ran";
  EXPECT_EQ(browser().run("return document.querySelectorAll('main img, main script').length;"), 0)
      << "an element was made of the data";
}

// Issue 31.3: a report is bounded: diffs cut first, then outcomes left out, saying so.
TEST(NodeReportBound, DiffsAreCutFirstThenOutcomesAndItSaysSo) {
  NodeReport r;
  r.node = "n1";
  r.cluster = "c";
  for (int i = 0; i < 40; ++i)
    r.outcomes.push_back({fmt::format("m.f{}", i), "file", "updated", "declared", "", false,
                          std::string(64 * 1024, 'a'), false});
  const std::string text = encodeReport(r);
  EXPECT_LE(text.size(), kReportMaxBytes);
  const auto back = decodeReport(text, "r");
  EXPECT_EQ(back.outcomes.size(), 40u) << "outcomes kept while cutting diffs is enough";
  EXPECT_TRUE(back.outcomes[0].diffCut);
  EXPECT_NE(back.cut.find("diffs cut"), std::string::npos) << back.cut;

  for (int i = 0; i < 20000; ++i)
    r.outcomes.push_back(
        {fmt::format("m.g{}", i), "file", "failed", std::string(100, 'r'), "", false, "", false});
  const std::string many = encodeReport(r);
  EXPECT_LE(many.size(), kReportMaxBytes);
  const auto cut = decodeReport(many, "r");
  EXPECT_LT(cut.outcomes.size(), r.outcomes.size());
  EXPECT_NE(cut.cut.find("outcome(s) left out"), std::string::npos) << cut.cut;
}

}  // namespace
}  // namespace mesh::fleet::test
