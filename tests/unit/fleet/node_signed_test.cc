// What a node signs: checkNodeJson reads a status as the node wrote it (the signed bytes
// with a "signature" member cut out) and as anyone may have re-written it (parsed, the
// member removed, dumped again), and accepts nothing the node's key did not sign.
#include "fleet/node_signed.hh"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "trust/node_key.hh"

namespace mesh::fleet {
namespace {

using nlohmann::json;

const std::string kStatus =
    R"({"cluster":"c","node":"n1","serial":4,"summary":{"created":1,"failed":0}})";

TEST(NodeSigned, AStatusAsTheNodeWroteItVerifiesAndParsesToWhatItSigned) {
  const auto key = trust::NodeKey::ephemeral();
  const std::string text = signNodeJson(kStatus, key);
  json parsed;
  EXPECT_EQ(checkNodeJson(text, key.publicKey(), &parsed), NodeSignature::Valid);
  EXPECT_EQ(parsed, json::parse(kStatus));
  // Re-written with other spacing and key order: the same object, still the node's.
  const json j = json::parse(text);
  const std::string spaced =
      "{ \"signature\" : " + j["signature"].dump() + ", " + kStatus.substr(1);
  json again;
  EXPECT_EQ(checkNodeJson(spaced, key.publicKey(), &again), NodeSignature::Valid) << spaced;
  EXPECT_EQ(again, json::parse(kStatus));
}

TEST(NodeSigned, NothingTheKeyDidNotSignVerifies) {
  const auto key = trust::NodeKey::ephemeral();
  const auto other = trust::NodeKey::ephemeral();
  const std::string text = signNodeJson(kStatus, key);
  EXPECT_EQ(checkNodeJson(text, other.publicKey()), NodeSignature::Invalid);
  std::string tampered = text;
  tampered.replace(tampered.find("\"serial\":4"), 10, "\"serial\":5");
  EXPECT_EQ(checkNodeJson(tampered, key.publicKey()), NodeSignature::Invalid);
  EXPECT_EQ(checkNodeJson(kStatus, key.publicKey()), NodeSignature::Unsigned);
  // The signature member moved into a nested object: not the node's top-level signature.
  json j = json::parse(text);
  const std::string sig = j["signature"];
  j.erase("signature");
  j["summary"]["signature"] = sig;
  json parsed;
  const auto verdict = checkNodeJson(j.dump(), key.publicKey(), &parsed);
  // Either refused, or read as exactly what the node signed — never anything else.
  if (verdict == NodeSignature::Valid) {
    EXPECT_EQ(parsed, json::parse(kStatus));
  }
}

// The bytes as a node would sign them, with its signature put first: the form signNodeJson
// writes, which checkNodeJson reads without a tree.
std::string signedAsWritten(const std::string& signedBytes, const trust::NodeKey& key) {
  return "{\"signature\":" + json(key.sign(signedBytes)).dump() + "," + signedBytes.substr(1);
}

// Whom a status names, read without a tree, is what the tree says: the top-level strings
// only, the last of a key given twice, "" for one that is not a string.
TEST(NodeSigned, WhomASignedStatusNamesIsReadAsTheTreeReadsIt) {
  const auto key = trust::NodeKey::ephemeral();
  const std::vector<std::pair<std::string, SignedFor>> cases = {
      {R"({"cluster":"c","node":"n1"})", {"n1", "c"}},
      {R"({"cluster":"c","node":"n1","node":"n2"})", {"n2", "c"}},
      {R"({"cluster":"c","node":"n1","node":5})", {"", "c"}},
      {R"({"cluster":"c","node":5})", {"", "c"}},
      {R"({"cluster":["c"],"node":{"node":"n1"}})", {"", ""}},
      {R"({"a":{"node":"x","cluster":"y"},"cluster":"c","l":["node",{"node":"z"}],"node":"n1"})",
       {"n1", "c"}},
      {R"({"cluster":"c\u0041","node":"n\"1"})", {"n\"1", "cA"}},
  };
  for (const auto& [bytes, want] : cases) {
    const json tree = json::parse(bytes);
    for (const auto* name : {"node", "cluster"}) {
      const auto it = tree.find(name);
      const std::string fromTree =
          it != tree.end() && it->is_string() ? it->get<std::string>() : "";
      EXPECT_EQ(fromTree, std::string(name) == "node" ? want.node : want.cluster) << bytes;
    }
    SignedFor got{"stale", "stale"};
    EXPECT_EQ(checkNodeJson(signedAsWritten(bytes, key), key.publicKey(), got),
              NodeSignature::Valid)
        << bytes;
    EXPECT_EQ(got.node, want.node) << bytes;
    EXPECT_EQ(got.cluster, want.cluster) << bytes;
  }
  // Signed bytes with a top-level signature of their own, or that are not one JSON object,
  // are not the node's status, whichever way they are read.
  for (const std::string bytes :
       {R"({"node":"n1","signature":"x"})", R"({"node":"n1"} {})", R"({"node":"n1"}x)"}) {
    SignedFor got;
    EXPECT_NE(checkNodeJson(signedAsWritten(bytes, key), key.publicKey(), got),
              NodeSignature::Valid)
        << bytes;
  }
  // A wrong key, a changed byte, no signature: as with the tree.
  const std::string text = signedAsWritten(R"({"cluster":"c","node":"n1"})", key);
  SignedFor got;
  EXPECT_EQ(checkNodeJson(text, trust::NodeKey::ephemeral().publicKey(), got),
            NodeSignature::Invalid);
  std::string tampered = text;
  tampered.replace(tampered.find("\"n1\""), 4, "\"n2\"");
  EXPECT_EQ(checkNodeJson(tampered, key.publicKey(), got), NodeSignature::Invalid);
  EXPECT_EQ(checkNodeJson(R"({"cluster":"c","node":"n1"})", key.publicKey(), got),
            NodeSignature::Unsigned);
  // Re-written with other spacing (read through the tree): whom it names all the same.
  const std::string spaced = "{ " + text.substr(1);
  SignedFor again;
  EXPECT_EQ(checkNodeJson(spaced, key.publicKey(), again), NodeSignature::Valid);
  EXPECT_EQ(again.node, "n1");
  EXPECT_EQ(again.cluster, "c");
}

}  // namespace
}  // namespace mesh::fleet
