// The node key's signing half: what fleet mode's signed statuses rest on.
#include <gtest/gtest.h>
#include <sodium.h>

#include "trust/node_key.hh"
#include "util/error.hh"

namespace mesh::trust {
namespace {

class NodeSigning : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_GE(sodium_init(), 0); }
};

TEST_F(NodeSigning, ASignatureVerifiesAgainstThePrintedKeyAndNothingElse) {
  const NodeKey node = NodeKey::ephemeral();
  const auto key = NodePublicKey::parse(node.publicKeyText() + "\n", "test");
  EXPECT_EQ(key, node.publicKey());
  const std::string sig = node.sign("status v1");
  EXPECT_TRUE(sig.starts_with("mesh-nsig:")) << sig;
  EXPECT_TRUE(nodeSignatureMatches(key, "status v1", sig));
  EXPECT_FALSE(nodeSignatureMatches(key, "status v2", sig));
  EXPECT_FALSE(nodeSignatureMatches(NodeKey::ephemeral().publicKey(), "status v1", sig));
  EXPECT_FALSE(nodeSignatureMatches(key, "status v1", ""));
  EXPECT_FALSE(nodeSignatureMatches(key, "status v1", "mesh-nsig:AAAA"));
  EXPECT_FALSE(nodeSignatureMatches(key, "status v1", sig.substr(10)));
}

TEST_F(NodeSigning, TheSealingHalfAloneIsNamedAsSuchWhenEnrolled) {
  const NodeKey node = NodeKey::ephemeral();
  const std::string full = node.publicKeyText();
  // The first 32 bytes alone, as an older mesh-host printed them.
  unsigned char both[64];
  size_t len = 0;
  ASSERT_EQ(sodium_base642bin(both, sizeof both, full.data() + 10, full.size() - 10, nullptr, &len,
                              nullptr, sodium_base64_VARIANT_ORIGINAL),
            0);
  char half[sodium_base64_ENCODED_LEN(32, sodium_base64_VARIANT_ORIGINAL)];
  sodium_bin2base64(half, sizeof half, both, 32, sodium_base64_VARIANT_ORIGINAL);
  const std::string old = std::string("mesh-node:") + half;
  try {
    (void)NodePublicKey::parse(old, "enroll");
    FAIL() << "accepted the sealing half alone";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("sealing half"), std::string::npos) << e.what();
  }
  // It still seals: the sealing half is the same.
  EXPECT_TRUE(node.openSealed(NodeKey::seal(Secret("x"), old)));
  EXPECT_TRUE(node.openSealed(NodeKey::seal(Secret("x"), full)));
  for (const char* bad : {"", "mesh-node:", "mesh-op:AAAA", "mesh-node:!!"})
    EXPECT_THROW((void)NodePublicKey::parse(bad, "enroll"), InputError) << bad;
}

}  // namespace
}  // namespace mesh::trust
