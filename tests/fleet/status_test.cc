// `mesh-host fleet status`: each node's state from its keys in etcd, the details of the
// ones not converged, --json, and the exit code.
#include <time.h>

#include <chrono>
#include <ctime>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "fleet_fixture.hh"
#include "trust/operator_key.hh"
#include "util/digest.hh"

namespace mesh::fleet::test {
namespace {

using FleetStatus = FleetTest;

// NODE → STATE from the table (the lines before the first blank one).
std::map<std::string, std::string> statesIn(const std::string& out) {
  std::map<std::string, std::string> states;
  std::istringstream lines(out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line.rfind("NODE ", 0), 0u) << out;
  while (std::getline(lines, line) && !line.empty()) {
    std::istringstream cells(line);
    std::string node, wanted, applied, digest, state;
    cells >> node >> wanted >> applied >> digest >> state;
    states[node] = state;
  }
  return states;
}

TEST_F(FleetStatus, ShowsEveryStateWithItsReasonAndExitsOne) {
  const auto revs = publishEveryState();
  const auto rev = revs.conv, earlier = revs.behindEarlier, later = revs.behindLater,
             refRev = revs.refusing, churnRev = revs.churning;

  Result r = status();
  EXPECT_EQ(r.code, 1) << r.err;
  const std::map<std::string, std::string> want = {
      {"behind", "behind"},   {"churning", "churning"}, {"conv", "converged"},  {"down", "down"},
      {"failing", "failing"}, {"never", "down"},        {"refusing", "refused"}};
  EXPECT_EQ(statesIn(r.out), want) << r.out;
  for (const char* detail : {"refusing: refused serial 7", "signed by mesh-op:xyz, not trusted",
                             "failing: failed demo.config: permission denied",
                             "churning: churning: demo.runtime", "behind: behind: applied serial 6",
                             "never: down: never seen", "down: down: no status since"})
    EXPECT_NE(r.out.find(detail), std::string::npos) << detail << "\n" << r.out;
  EXPECT_EQ(r.out.find("conv: "), std::string::npos) << r.out;  // converged: no details

  Result j = status({"--json"});
  EXPECT_EQ(j.code, 1);
  const auto out = j.json();
  EXPECT_EQ(out.at("cluster"), cluster);
  EXPECT_GE(out.at("revision").get<int64_t>(), churnRev);
  std::map<std::string, nlohmann::json> nodes;
  for (const auto& n : out.at("nodes")) nodes[n.at("node")] = n;
  ASSERT_EQ(nodes.size(), 7u);
  for (const auto& [node, state] : want) EXPECT_EQ(nodes[node].at("state"), state) << node;
  EXPECT_EQ(nodes["conv"].at("up"), true);
  EXPECT_EQ(nodes["conv"].at("wanted_serial"), 6);
  EXPECT_EQ(nodes["conv"].at("wanted_revision"), rev);
  EXPECT_EQ(nodes["conv"].at("applied_serial"), 6);
  EXPECT_EQ(nodes["conv"].at("applied_revision"), rev);
  EXPECT_EQ(nodes["conv"].at("version"), "0.1.0");
  EXPECT_EQ(nodes["conv"].at("cycle"), 3);
  EXPECT_EQ(nodes["conv"].at("summary").at("unchanged"), 1);
  EXPECT_TRUE(nodes["conv"].at("refused").is_null());
  EXPECT_GT(nodes["conv"].at("last_seen_ms").get<int64_t>(), 0);
  EXPECT_EQ(nodes["down"].at("up"), false);
  EXPECT_GT(nodes["down"].at("last_seen_ms").get<int64_t>(), 0);  // from its seen key
  EXPECT_TRUE(nodes["never"].at("last_seen_ms").is_null());
  EXPECT_TRUE(nodes["never"].at("applied_serial").is_null());
  EXPECT_EQ(nodes["refusing"].at("refused").at("revision"), refRev);
  EXPECT_EQ(nodes["refusing"].at("refused").at("serial"), 7);
  EXPECT_EQ(nodes["refusing"].at("refused").at("reason"), "signed by mesh-op:xyz, not trusted");
  EXPECT_EQ(nodes["failing"].at("failed"), 1);
  EXPECT_EQ(nodes["failing"].at("failing"),
            nlohmann::json::parse(R"([{"id":"demo.config","reason":"permission denied"}])"));
  EXPECT_EQ(nodes["churning"].at("churning"), nlohmann::json::parse(R"(["demo.runtime"])"));
  EXPECT_EQ(nodes["behind"].at("applied_revision"), earlier);
  EXPECT_EQ(nodes["behind"].at("wanted_revision"), later);
  EXPECT_EQ(out.at("summary"), nlohmann::json::parse(R"({"nodes":7,"converged":1,"down":2,
      "behind":1,"refused":1,"failing":1,"churning":1,"unenrolled":0,"forged":0,"paused":0})"));
}

// Issue 12.2: convergence is by content. The same statement put again (a new revision,
// as after etcd was restored from a backup) changes nothing; the same serial with other
// content is behind, whatever revision the node's status names.
TEST_F(FleetStatus, ComparesDigestsAndSerialsNotRevisions) {
  const auto first = putDeclaration("web1", 6);
  publish(nodeStatus("web1", first, 6), true);
  putDeclaration("web1", 6);
  Result r = status();
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(statesIn(r.out).at("web1"), "converged") << r.out;

  const std::string other = declText(6, " other");
  client->put(keys.declaration("web1"), signedValue(statementFor(other, {"web1"}, 6), other));
  auto s = nodeStatus("web1", 1'000'000, 6);  // a revision far above: it does not matter
  publish(s, true);
  r = status();
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(statesIn(r.out).at("web1"), "behind") << r.out;
  EXPECT_NE(r.out.find(fmt::format("web1: behind: applied serial 6 ({}); serial 6 ({}) is pushed",
                                   shortDigest(s.declarationDigest),
                                   shortDigest(Digest::ofBytes(other).str()))),
            std::string::npos)
      << r.out;
}

// Issue 12.4: a digest per node and how many nodes are on each version.
TEST_F(FleetStatus, ShowsEachNodesDigestAndAPerVersionSummary) {
  for (const char* node : {"a", "b", "c"}) {
    putDeclaration(node, 2);
    publish(nodeStatus(node, 1, 2), true);
  }
  putDeclaration("d", 2);
  publish(nodeStatus("d", 1, 1), true);
  Result r = status();
  EXPECT_EQ(r.code, 1) << r.out;
  const std::string two = shortDigest(Digest::ofBytes(declText(2)).str());
  const std::string one = shortDigest(Digest::ofBytes(declText(1)).str());
  EXPECT_NE(r.out.find("DIGEST"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(two), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(fmt::format("versions: 3 node(s) on serial 2 ({}), 1 node(s) on serial 1 "
                                   "({})\n",
                                   two, one)),
            std::string::npos)
      << r.out;
  EXPECT_EQ(statesIn(r.out).at("d"), "behind") << r.out;
  Result j = status({"--json"});
  const auto versions = j.json().at("versions");
  ASSERT_EQ(versions.size(), 2u) << versions.dump();
  EXPECT_EQ(versions[0].at("nodes"), nlohmann::json::parse(R"(["a","b","c"])"));
  EXPECT_EQ(versions[0].at("serial"), 2);
  EXPECT_EQ(versions[0].at("digest"), Digest::ofBytes(declText(2)).str());
  const auto shown = j.json();  // held: a range over a temporary's member dangles
  for (const auto& n : shown.at("nodes"))
    if (n.at("node") == "d") {
      EXPECT_EQ(n.at("applied_digest"), Digest::ofBytes(declText(1)).str());
      EXPECT_EQ(n.at("wanted_digest"), Digest::ofBytes(declText(2)).str());
    }
}

// Issue 13: the per-version summary says who pushed each version and when, from the
// statement `fleet push` signed; a version no node's statement names any more says so.
TEST_F(FleetStatus, EachVersionSaysWhoPushedItAndWhen) {
  const int64_t before = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  Result p = push({"--nodes", "a,b", declare(declText(2))});
  ASSERT_EQ(p.code, 0) << p.err;
  const int64_t after = before + 60;
  for (const char* node : {"a", "b"}) publish(nodeStatus(node, 1, 2), true);
  publish(nodeStatus("c", 1, 1), true);  // nothing pushed to it names serial 1

  Result r = status();
  const std::string two = shortDigest(Digest::ofBytes(declText(2)).str());
  const std::string one = shortDigest(Digest::ofBytes(declText(1)).str());
  const std::string by = operatorKey.text().substr(0, 16) + "…";
  EXPECT_NE(r.out.find(fmt::format("\n  serial 2 ({}): pushed by {} at ", two, by)),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(fmt::format("\n  serial 1 ({}): pushed by: not known", one)),
            std::string::npos)
      << r.out;

  const auto versions = status({"--json"}).json().at("versions");
  ASSERT_EQ(versions.size(), 2u) << versions.dump();
  EXPECT_EQ(versions[0].at("serial"), 2);
  EXPECT_EQ(versions[0].at("pushed_by"), operatorKey.text());
  EXPECT_EQ(versions[0].at("pushed_verified"), true);
  std::tm tm{};
  const std::string at = versions[0].at("pushed_at");
  ASSERT_NE(::strptime(at.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm), nullptr) << at;
  const int64_t pushedAt = ::timegm(&tm);
  EXPECT_GE(pushedAt, before) << at;
  EXPECT_LE(pushedAt, after) << at;
  EXPECT_EQ(versions[1].at("serial"), 1);
  EXPECT_TRUE(versions[1].at("pushed_by").is_null());
  EXPECT_TRUE(versions[1].at("pushed_at").is_null());
}

// A statement whose signature is by no --trust key still names its claimed pusher, marked
// as not verified: `fleet status` shows what etcd says, never vouches for it.
TEST_F(FleetStatus, APusherNotSignedByATrustedKeyIsMarkedUnverified) {
  const std::string other = work + "/other.key";
  trust::OperatorKey::generate().saveNew(other);
  const std::string text = declText(3);
  client->put(keys.declaration("a"), signedValue(statementFor(text, {"a"}, 3), text, other));
  publish(nodeStatus("a", 1, 3), true);
  Result r = status();
  EXPECT_NE(r.out.find(", not signed by a --trust key\n"), std::string::npos) << r.out;
  const auto versions = status({"--json"}).json().at("versions");
  ASSERT_EQ(versions.size(), 1u);
  EXPECT_EQ(versions[0].at("pushed_verified"), false);
}

TEST_F(FleetStatus, AnOldRefusalDoesNotMakeANodeRefused) {
  const auto rev = putDeclaration("web1", 8);
  auto s = nodeStatus("web1", rev - 1, 7);
  s.refused =
      NodeStatus::Refusal{rev - 1, 7, "an older refusal", 1, valueDigest("an older value"), ""};
  publish(s, true);
  Result r = status();
  EXPECT_EQ(statesIn(r.out).at("web1"), "behind") << r.out;
}

// Issue 13 (at scale): the seen copy lives at /mesh/<cluster>/seen/<node>, read only when
// a node is down; a down node whose older agent left its copy under the node's prefix is
// shown from that one.
TEST_F(FleetStatus, ADownNodesSeenCopyIsReadFromEitherPlace) {
  const auto rev = putDeclaration("new", 3);
  publish(nodeStatus("new", rev, 3), false);
  ASSERT_TRUE(client->get("/mesh/" + cluster + "/seen/new"));
  const auto oldRev = putDeclaration("old", 3);
  publish(nodeStatus("old", oldRev, 3), false);
  client->put(keys.legacySeen("old"), client->get(keys.seen("old"))->value);
  client->del(keys.seen("old"));
  Result r = status({"--json"});
  EXPECT_EQ(r.code, 1);
  for (const auto& n : r.json().at("nodes")) {
    EXPECT_EQ(n.at("state"), "down") << n.dump();
    EXPECT_EQ(n.at("applied_serial"), 3) << n.dump();
  }
}

TEST_F(FleetStatus, AllConvergedExitsZero) {
  for (const char* node : {"a", "b"}) {
    const auto rev = putDeclaration(node, 2);
    publish(nodeStatus(node, rev, 2), true);
  }
  publish(nodeStatus("unmanaged", 0, std::nullopt), true);  // up, nothing pushed
  Result r = status();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(statesIn(r.out),
            (std::map<std::string, std::string>{
                {"a", "converged"}, {"b", "converged"}, {"unmanaged", "converged"}}));
  EXPECT_NE(r.out.find("3 node(s), 3 converged\n"), std::string::npos) << r.out;
  Result j = status({"--json"});
  EXPECT_EQ(j.code, 0);
  const nlohmann::json jNodes = j.json().at("nodes");
  for (const auto& n : jNodes)
    if (n.at("node") == "unmanaged") {
      EXPECT_TRUE(n.at("wanted_serial").is_null());
    }
}

TEST_F(FleetStatus, NoNodesExitsZeroSayingSo) {
  Result r = status();
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("no nodes"), std::string::npos) << r.out;
  Result j = status({"--json"});
  EXPECT_EQ(j.code, 0);
  EXPECT_EQ(j.json().at("nodes"), nlohmann::json::array());
  EXPECT_EQ(j.json().at("summary").at("nodes"), 0);
}

TEST_F(FleetStatus, UnreachableEtcdExitsOneSayingSo) {
  Result r = runCommand({MESH_HOST_BIN, "fleet", "status", "--etcd", "http://127.0.0.1:1",
                         "--trust", operatorKey.text()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("etcd at http://127.0.0.1:1 unreachable"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mesh::fleet::test
