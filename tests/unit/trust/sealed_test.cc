// NodeKey sealing: what `mesh-host seal` makes, the node it was sealed to opens;
// another node, or a damaged value, cannot.
#include <gtest/gtest.h>
#include <sodium.h>

#include <string>

#include "trust/node_key.hh"
#include "util/error.hh"

namespace mesh::trust {
namespace {

class Sealing : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_GE(sodium_init(), 0); }
};

std::string plain(const Secret& s) {
  return std::string(s.exposeForWrite());
}

TEST_F(Sealing, RoundTrip) {
  const NodeKey node = NodeKey::ephemeral();
  const std::string sealed = NodeKey::seal(Secret("hunter2-unit"), node.publicKeyText());
  ASSERT_TRUE(sealed.starts_with("sealed:")) << sealed;
  EXPECT_EQ(sealed.find("hunter2-unit"), std::string::npos);
  auto opened = node.openSealed(sealed);
  ASSERT_TRUE(opened);
  EXPECT_EQ(plain(*opened), "hunter2-unit");
  // Randomised: the same secret seals differently each time, and both open.
  const std::string again = NodeKey::seal(Secret("hunter2-unit"), node.publicKeyText());
  EXPECT_NE(again, sealed);
  ASSERT_TRUE(node.openSealed(again));
  EXPECT_EQ(node.keyedDigest(*node.openSealed(again)), node.keyedDigest(*opened));
}

TEST_F(Sealing, PublicKeyText) {
  const NodeKey node = NodeKey::ephemeral();
  const std::string pub = node.publicKeyText();
  EXPECT_TRUE(pub.starts_with("mesh-node:")) << pub;
  EXPECT_EQ(pub.size(), std::string("mesh-node:").size() + 88);  // sealing and signing halves
  EXPECT_EQ(pub, node.publicKeyText());
  EXPECT_NE(pub, NodeKey::ephemeral().publicKeyText());
  // A trailing newline, as `key show` output pasted, is accepted.
  EXPECT_TRUE(node.openSealed(NodeKey::seal(Secret("x"), pub + "\n")));
}

TEST_F(Sealing, WrongKeyCannotOpen) {
  const NodeKey node = NodeKey::ephemeral();
  const NodeKey other = NodeKey::ephemeral();
  const std::string sealed = NodeKey::seal(Secret("for-the-other"), other.publicKeyText());
  EXPECT_FALSE(node.openSealed(sealed));
  EXPECT_TRUE(other.openSealed(sealed));
}

TEST_F(Sealing, TamperedCannotOpen) {
  const NodeKey node = NodeKey::ephemeral();
  const std::string sealed = NodeKey::seal(Secret("intact"), node.publicKeyText());
  for (size_t at = std::string("sealed:").size(); at + 4 < sealed.size(); at += 7) {
    std::string t = sealed;
    t[at] = t[at] == 'A' ? 'B' : 'A';
    EXPECT_FALSE(node.openSealed(t)) << "flipped at " << at;
  }
  EXPECT_FALSE(node.openSealed(sealed.substr(0, sealed.size() - 8)));
  EXPECT_FALSE(node.openSealed("sealed:"));
  EXPECT_FALSE(node.openSealed("sealed:not base64!"));
  EXPECT_FALSE(node.openSealed(sealed.substr(std::string("sealed:").size())));
}

TEST_F(Sealing, SealRefusesWhatIsNotAPublicKey) {
  EXPECT_THROW(NodeKey::seal(Secret("x"), "mesh-node:AAAA"), Error);
  EXPECT_THROW(NodeKey::seal(Secret("x"), "ssh-ed25519 AAAA"), Error);
  EXPECT_THROW(NodeKey::seal(Secret("x"), ""), Error);
}

}  // namespace
}  // namespace mesh::trust
