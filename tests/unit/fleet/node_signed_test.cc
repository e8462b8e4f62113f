// What a node signs: checkNodeJson reads a status as the node wrote it (the signed bytes
// with a "signature" member cut out) and as anyone may have re-written it (parsed, the
// member removed, dumped again), and accepts nothing the node's key did not sign.
#include "fleet/node_signed.hh"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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

}  // namespace
}  // namespace mesh::fleet
