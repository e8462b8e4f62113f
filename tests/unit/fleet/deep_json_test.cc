// Issue 27 (found by the status fuzz target): a value in etcd nested 300,000 deep
// (600 KB) crashed fleet status and the agent: checkNodeJson dumps the parsed value to
// check its signature, and nlohmann's dump and copy recurse per level. Every decoder of
// an etcd value now refuses JSON nested deeper than kMaxJsonDepth as malformed.
#include <gtest/gtest.h>

#include <string>

#include "fleet/bodies.hh"
#include "fleet/enroll.hh"
#include "fleet/node_signed.hh"
#include "fleet/protocol.hh"
#include "fleet/push_history.hh"
#include "fleet/statement.hh"
#include "trust/node_key.hh"
#include "trust/operator_key.hh"
#include "util/error.hh"
#include "util/json_depth.hh"

namespace mesh::fleet {
namespace {

std::string deep(const std::string& field, int n = 300000) {
  return R"({"node":"web-1","cluster":"prod","type":"mesh-host fleet statement v1",")" + field +
         R"(":)" + std::string(n, '[') + std::string(n, ']') + R"(,"signature":"s"})";
}

TEST(DeepJson, EveryEtcdValueDecoderRefusesItAndLives) {
  const auto node = trust::NodeKey::ephemeral();
  const auto op = trust::OperatorKey::generate();
  for (const std::string field : {"x", "record", "statement", "key"}) {
    const std::string text = deep(field);
    EXPECT_THROW(decodeStatus(text, "k"), InputError);
    EXPECT_THROW(decodeStatement(text, "k"), InputError);
    EXPECT_THROW(decodePushed(text, "k"), InputError);
    EXPECT_THROW(decodeHeartbeat(text, "k"), InputError);
    EXPECT_THROW(verifyEnrollment(text, "prod", "web-1", {op.publicKey()}, "k"), InputError);
    nlohmann::json parsed;
    EXPECT_EQ(checkNodeJson(text, node.publicKey(), &parsed), NodeSignature::Invalid);
    SignedFor whom;
    EXPECT_EQ(checkNodeJson(text, node.publicKey(), whom), NodeSignature::Invalid);
    EXPECT_FALSE(readPushRecord("k", text, {op.publicKey()}).record);
    EXPECT_FALSE(decodeBodyManifest(text, "k"));
  }
}

// Issue 27: a field of another type where a string was read with json::value threw
// nlohmann's type_error past the decoder (fleet history and the body read end in
// "internal error"): such a value is now simply not a record / not a manifest.
TEST(WrongTypes, APushRecordOrBodyManifestOfOtherTypesIsRefusedNotThrown) {
  for (const char* value : {R"({"record":1,"signature":2})", R"({"record":"{\"type\":1}"})",
                            R"({"record":"[1]"})", R"([1])"}) {
    PushHistoryEntry e;
    EXPECT_NO_THROW(e = readPushRecord("k", value, {})) << value;
    EXPECT_FALSE(e.record) << value;
    EXPECT_FALSE(e.problem.empty()) << value;
  }
  EXPECT_NO_THROW(EXPECT_FALSE(decodeBodyManifest(R"({"type":1})", "k")));
  EXPECT_THROW(
      decodeBodyManifest(R"({"type":"mesh-host chunked body v1","size":"1","chunks":1})", "k"),
      InputError);
}

TEST(DeepJson, TheDepthScanCountsBracketsOutsideStringsOnly) {
  EXPECT_FALSE(jsonNestsDeeperThan(R"({"a":"[[[[[[[[[[\"[[[[[[","b":[[1]]})", 3));
  EXPECT_TRUE(jsonNestsDeeperThan(R"({"a":[[[1]]]})", 3));
  EXPECT_FALSE(jsonNestsDeeperThan(R"({"a":[[1]],"b":[[2]]})", 3));
}

}  // namespace
}  // namespace mesh::fleet
