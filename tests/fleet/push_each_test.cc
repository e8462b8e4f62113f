// Issue 31: `fleet push --each DIR` pushes DIR/<node>.toml to each node in one push — one
// lock, one serial, one signed statement per distinct text, one history record — and
// refuses the whole push, before anything is written, for a file whose name is not a node
// name or whose declaration is invalid. Also: `--nodes GLOB` skips the names under the
// nodes prefix that are not node names, saying how many.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "fleet_fixture.hh"
#include "util/digest.hh"

namespace mesh::fleet::test {
namespace {

namespace fs = std::filesystem;

class FleetPushEach : public FleetTest {
 protected:
  // DIR with each (node, text) as DIR/<node>.toml.
  std::string eachDir(const std::string& name,
                      const std::vector<std::pair<std::string, std::string>>& files) const {
    const std::string dir = work + "/" + name;
    fs::create_directories(dir);
    for (const auto& [file, text] : files) std::ofstream(dir + "/" + file) << text;
    return dir;
  }
  size_t records() const { return client->keysUnder(keys.pushesPrefix()).kvs.size(); }
};

TEST_F(FleetPushEach, OneStatementPerDistinctTextAndOneRecord) {
  const std::string shared = declText(4, " {node}");
  const std::string own = declText(4, " own");
  const auto dir = eachDir("each", {{"web1.toml", shared},
                                    {"web2.toml", own},
                                    {"web3.toml", shared},
                                    {"notes.txt", "not a declaration"}});
  Result r = push({"--each", dir, "--json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = r.json();
  ASSERT_EQ(j.at("nodes").size(), 3u) << r.out;
  std::map<std::string, std::string> digestOf;
  for (const auto& n : j.at("nodes")) {
    EXPECT_EQ(n.at("result"), "pushed") << n.dump();
    EXPECT_EQ(n.at("serial"), 4) << n.dump();
    digestOf[n.at("node")] = n.at("digest");
  }
  EXPECT_EQ(digestOf.at("web1"), Digest::ofBytes(shared).str());
  EXPECT_EQ(digestOf.at("web3"), Digest::ofBytes(shared).str());
  EXPECT_EQ(digestOf.at("web2"), Digest::ofBytes(own).str());

  // Each node holds its own file's exact bytes, under a statement whose selector is the
  // nodes that got that text: one signed statement per distinct text.
  EXPECT_EQ(pushedTo("web1")->text, shared);
  EXPECT_EQ(pushedTo("web2")->text, own);
  EXPECT_EQ(pushedTo("web1")->statement, pushedTo("web3")->statement);
  EXPECT_NE(pushedTo("web1")->statement, pushedTo("web2")->statement);
  EXPECT_EQ(statementOf("web1")->selector.items, (std::vector<std::string>{"web1", "web3"}));
  EXPECT_EQ(statementOf("web2")->selector.items, (std::vector<std::string>{"web2"}));
  for (const char* n : {"web1", "web2", "web3"}) {
    const auto st = verifyStatement(*pushedTo(n), n, {operatorKey});
    EXPECT_EQ(st.serial, 4) << n;
    EXPECT_EQ(st.pushedAtMs, statementOf("web1")->pushedAtMs) << "one push";
  }

  // One history record: every node, two texts.
  Result h = runCommand(fleetArgv("history", {"--json"}));
  ASSERT_EQ(h.code, 0) << h.err;
  const auto pushes = h.json().at("pushes");
  ASSERT_EQ(pushes.size(), 1u) << h.out;
  EXPECT_EQ(pushes[0].at("nodes"), 3);
  EXPECT_EQ(pushes[0].at("texts"), 2);
  EXPECT_EQ(pushes[0].at("serial"), 4);
  EXPECT_EQ(pushes[0].at("results").at("pushed"), 3);
  EXPECT_EQ(pushes[0].at("selector"), "web1, web2, web3");
  Result text = runCommand(fleetArgv("history", {}));
  EXPECT_NE(text.out.find("--each: 2 text(s)"), std::string::npos) << text.out;

  // The same files again: unchanged everywhere, and a second record.
  Result again = push({"--each", dir});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("unchanged web2: serial 4 already pushed"), std::string::npos)
      << again.out;
  EXPECT_EQ(records(), 2u);
}

TEST_F(FleetPushEach, ABadFileRefusesTheWholePushBeforeAnythingIsWritten) {
  const auto nothingWritten = [&](const Result& r, const std::string& what) {
    EXPECT_EQ(r.code, 2) << what << "\n" << r.out << r.err;
    EXPECT_FALSE(pushedTo("web1")) << what;
    EXPECT_FALSE(pushedTo("web2")) << what;
    EXPECT_EQ(records(), 0u) << what;
    EXPECT_TRUE(client->keysUnder(keys.bodiesPrefix()).kvs.empty()) << what;
  };
  const std::string good = declText(5);
  {
    const auto dir = eachDir("badname", {{"web1.toml", good}, {"web 2.toml", good}});
    Result r = push({"--each", dir});
    nothingWritten(r, "a file name that is no node name");
    EXPECT_NE(r.err.find(dir + "/web 2.toml: its name is not <node>.toml for a node name"),
              std::string::npos)
        << r.err;
  }
  {
    const auto dir =
        eachDir("invalid", {{"web1.toml", good}, {"web2.toml", "serial = 5\n[module.m.file.x]\n"}});
    Result r = push({"--each", dir});
    nothingWritten(r, "an invalid declaration");
    EXPECT_NE(r.err.find(dir + "/web2.toml:"), std::string::npos) << r.err;
  }
  {
    const auto dir = eachDir("serials", {{"web1.toml", good}, {"web2.toml", declText(6)}});
    Result r = push({"--each", dir});
    nothingWritten(r, "two serials");
    EXPECT_NE(r.err.find("one push has one serial"), std::string::npos) << r.err;
  }
  {
    const auto dir =
        eachDir("other-node", {{"web1.toml", good}, {"web2.toml", "node = \"web1\"\n" + good}});
    Result r = push({"--each", dir});
    nothingWritten(r, "a file for another node");
    EXPECT_NE(r.err.find("web2.toml"), std::string::npos) << r.err;
  }
  {
    const auto dir = eachDir("empty", {{"README", "no toml here"}});
    Result r = push({"--each", dir});
    nothingWritten(r, "no file");
    EXPECT_NE(r.err.find("no <node>.toml file"), std::string::npos) << r.err;
  }
  Result both = push({"--each", work, "--node", "web1"});
  nothingWritten(both, "--each with --node");
  EXPECT_NE(both.err.find("give no DECL, --node or --nodes with it"), std::string::npos)
      << both.err;
}

// Names under the nodes prefix that are not node names (put there by hand, or by another
// tool) are skipped by a glob, with a warning saying how many; a glob that matches only
// such names matches no node.
TEST_F(FleetPushEach, AGlobSkipsEtcdNamesThatAreNotNodeNamesSayingHowMany) {
  client->put(keys.nodesPrefix() + "bad name/status", "{}");
  client->put(keys.nodesPrefix() +
                  "bad\x01"
                  "ctl/status",
              "{}");
  client->put(keys.nodesPrefix() + "bad1/status", "{}");
  const auto decl = declare(declText(1));
  Result r = push({"--nodes", "bad*", "--json", decl});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  ASSERT_EQ(r.json().at("nodes").size(), 1u) << r.out;
  EXPECT_EQ(r.json()["nodes"][0].at("node"), "bad1");
  EXPECT_NE(r.err.find("--nodes: skipped 2 name(s) under " + keys.nodesPrefix() +
                       " that are not node names"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(client->get(keys.nodesPrefix() + "bad name/declaration"));
  EXPECT_FALSE(client->get(keys.nodesPrefix() + "bad\x01"
                                                "ctl/declaration"));

  client->del(keys.declaration("bad1"));
  client->del(keys.nodesPrefix() + "bad1/status");
  Result only = push({"--nodes", "bad*", decl});
  EXPECT_EQ(only.code, 2) << only.out << only.err;
  EXPECT_NE(only.err.find("skipped 2 name(s)"), std::string::npos) << only.err;
  EXPECT_NE(only.err.find("\"bad*\" matches no node"), std::string::npos) << only.err;
}

}  // namespace
}  // namespace mesh::fleet::test
