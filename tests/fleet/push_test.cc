// `mesh-host fleet push`: what it puts, to which nodes, and what it refuses (pushing
// nothing at all when it refuses).
#include <fmt/format.h>

#include "fleet_fixture.hh"
#include "trust/signing.hh"

namespace mesh::fleet::test {
namespace {

using FleetPush = FleetTest;

TEST_F(FleetPush, ToOneNodePutsADeclarationWhoseSignatureVerifies) {
  const std::string text = declText(3);
  const auto decl = declare(text);
  Result r = push({"--node", "web1", "--max-parallel-restarts", "2", decl});
  ASSERT_EQ(r.code, 0) << r.err;

  const auto pushed = pushedTo("web1");
  ASSERT_TRUE(pushed);
  EXPECT_EQ(pushed->text, text);  // the exact bytes
  EXPECT_EQ(pushed->serial, 3);
  EXPECT_EQ(pushed->maxParallelRestarts, 2);
  EXPECT_EQ(pushed->pushedBy, operatorKey.text());
  EXPECT_GT(pushed->pushedAtMs, 0);
  const auto signer = trust::verifySignedText("web1", pushed->text, pushed->signature,
                                              "web1 signature", {operatorKey});
  EXPECT_EQ(signer, operatorKey);

  const auto revision = declarationRevision("web1");
  ASSERT_TRUE(revision);
  EXPECT_EQ(r.out, fmt::format("pushed web1: serial 3 (revision {})\n", *revision));
}

TEST_F(FleetPush, ToAGlobReachesExactlyTheMatchingKnownNodes) {
  publish(nodeStatus("web1", 0, std::nullopt), /*up=*/true);
  publish(nodeStatus("web2", 0, std::nullopt), /*up=*/false);  // down: only seen
  putDeclaration("web3", 1);                                   // never started
  publish(nodeStatus("db1", 0, std::nullopt), /*up=*/true);
  publish(nodeStatus("webby", 0, std::nullopt), /*up=*/true);

  Result r = push({"--nodes", "web?,db2", "--json", declare(declText(4))});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = r.json();
  std::vector<std::string> nodes;
  for (const auto& n : j.at("nodes")) {
    nodes.push_back(n.at("node"));
    EXPECT_EQ(n.at("result"), "pushed");
    EXPECT_EQ(n.at("serial"), 4);
    EXPECT_EQ(n.at("revision"), *declarationRevision(n.at("node")));
  }
  EXPECT_EQ(nodes, (std::vector<std::string>{"db2", "web1", "web2", "web3"}));
  EXPECT_EQ(j.at("cluster"), cluster);
  for (const char* n : {"web1", "web2", "web3", "db2"}) EXPECT_EQ(pushedTo(n)->serial, 4) << n;
  EXPECT_FALSE(pushedTo("db1"));
  EXPECT_FALSE(pushedTo("webby"));
}

TEST_F(FleetPush, GlobMatchingNothingIsBadInputAndPushesNothing) {
  publish(nodeStatus("web1", 0, std::nullopt), true);
  Result r = push({"--node", "web1", "--nodes", "db-*", declare(declText(1))});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("\"db-*\" matches no node"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was pushed"), std::string::npos) << r.err;
  EXPECT_FALSE(pushedTo("web1"));
  EXPECT_EQ(r.out, "");
}

TEST_F(FleetPush, DeclarationWithoutSerialIsBadInput) {
  Result r = push({"--node", "web1",
                   declare("[module.demo.file.config]\npath = \"/etc/x\"\ncontent = \"\"\n")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("add serial = N"), std::string::npos) << r.err;
  EXPECT_FALSE(pushedTo("web1"));
}

TEST_F(FleetPush, InvalidDeclarationIsBadInputNamingThePlaceAndPushesNothing) {
  const auto decl = declare("serial = 1\n[module.demo.file.config]\npath = \"relative\"\n");
  Result r = push({"--nodes", "web1,web2", decl});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(decl + ":3:"), std::string::npos) << r.err;
  EXPECT_FALSE(pushedTo("web1"));
  EXPECT_FALSE(pushedTo("web2"));

  r = push({"--node", "web1", declare("serial = = 1\n", "broken.toml")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("broken.toml:1:"), std::string::npos) << r.err;
  EXPECT_FALSE(pushedTo("web1"));
}

TEST_F(FleetPush, DeclarationForAnotherNodeIsBadInput) {
  Result r = push({"--nodes", "web1,web2", declare("node = \"web1\"\n" + declText(1))});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("is for node 'web1'"), std::string::npos) << r.err;
  EXPECT_FALSE(pushedTo("web1"));
  EXPECT_EQ(push({"--node", "web1", declare("node = \"web1\"\n" + declText(1))}).code, 0);
}

TEST_F(FleetPush, LowerSerialThanPushedIsRefusedForEveryNode) {
  ASSERT_EQ(push({"--node", "web1", declare(declText(5))}).code, 0);
  const auto before = declarationRevision("web1");
  Result r = push({"--nodes", "web1,web2", declare(declText(4), "older.toml")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("node web1: serial 4 is older than serial 5"), std::string::npos) << r.err;
  EXPECT_EQ(declarationRevision("web1"), before);
  EXPECT_FALSE(pushedTo("web2"));  // a refusal for one node pushes to none
}

TEST_F(FleetPush, SameSerialSameTextIsUnchangedWithNoNewRevision) {
  const auto decl = declare(declText(7));
  ASSERT_EQ(push({"--node", "web1", decl}).code, 0);
  const auto before = declarationRevision("web1");
  Result r = push({"--nodes", "web1,web2", decl});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("unchanged web1: serial 7 already pushed\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pushed web2: serial 7"), std::string::npos) << r.out;
  EXPECT_EQ(declarationRevision("web1"), before);

  Result json = push({"--node", "web1", "--json", decl});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_EQ(json.json().at("nodes").at(0).at("result"), "unchanged");
  EXPECT_EQ(json.json().at("nodes").at(0).at("revision"), *before);
}

TEST_F(FleetPush, SameSerialDifferentTextIsRefused) {
  ASSERT_EQ(push({"--node", "web1", declare(declText(7))}).code, 0);
  const auto before = declarationRevision("web1");
  Result r = push({"--node", "web1", declare(declText(7, " again"), "changed.toml")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bump serial to 8"), std::string::npos) << r.err;
  EXPECT_EQ(declarationRevision("web1"), before);
}

TEST_F(FleetPush, BadNamesAndMissingNodesAreBadInput) {
  const auto decl = declare(declText(1));
  Result r = push({"--node", "a/b", decl});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--node \"a/b\""), std::string::npos) << r.err;
  r = push({decl});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--node NAME or --nodes LIST"), std::string::npos) << r.err;
  r = runCommand(fleetArgv("push", {"--key", work + "/missing.key", "--node", "web1", decl}));
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(pushedTo("web1"));
}

TEST_F(FleetPush, UnreachableEtcdExitsOneSayingSo) {
  Result r = runCommand({MESH_HOST_BIN, "fleet", "push", "--etcd", "http://127.0.0.1:1", "--key",
                         keyFile, "--node", "web1", declare(declText(1))});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("etcd at http://127.0.0.1:1 unreachable"), std::string::npos) << r.err;
}

TEST_F(FleetPush, HelpDescribesOptionsAndExitCodes) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"fleet", "--help"},
                                               {"fleet", "push", "--help"},
                                               {"fleet", "status", "--help"}}) {
    std::vector<std::string> argv = {MESH_HOST_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    Result r = runCommand(argv);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("exit 0"), std::string::npos) << r.out;
  }
  Result r = runCommand({MESH_HOST_BIN, "fleet", "push", "--help"});
  for (const char* option : {"--etcd", "--cluster", "--key", "--node", "--nodes",
                             "--max-parallel-restarts", "--wait", "--json"})
    EXPECT_NE(r.out.find(option), std::string::npos) << option;
}

}  // namespace
}  // namespace mesh::fleet::test
