// NodeKey sealing: what `mesh-host seal` makes, the node it was sealed to opens;
// another node, or a damaged value, cannot.
#include <gtest/gtest.h>
#include <sodium.h>

#include <string>

#include "trust/node_key.hh"
#include "trust/sealed.hh"
#include "util/base64.hh"
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

// Issue 31: one value for many nodes. Three recipients each open it with their own
// key; a fourth cannot, and is told it is not a recipient (not "damaged").
TEST_F(Sealing, ThreeRecipientsEachOpenAFourthIsNotOne) {
  const NodeKey a = NodeKey::ephemeral(), b = NodeKey::ephemeral(), c = NodeKey::ephemeral();
  const NodeKey d = NodeKey::ephemeral();
  const std::string sealed = sealToMany(Secret("shared-secret-31"),
                                        {a.publicKeyText(), b.publicKeyText(), c.publicKeyText()});
  ASSERT_TRUE(sealed.starts_with("sealed:v2:3:")) << sealed;
  EXPECT_EQ(sealed.find("shared-secret-31"), std::string::npos);
  for (const NodeKey* k : {&a, &b, &c}) {
    auto opened = openSealedWith(*k, sealed);
    ASSERT_EQ(opened.result, OpenedSealed::Result::Opened);
    ASSERT_TRUE(opened.secret);
    EXPECT_EQ(plain(*opened.secret), "shared-secret-31");
    EXPECT_EQ(opened.recipients, 3u);
  }
  auto fourth = openSealedWith(d, sealed);
  EXPECT_EQ(fourth.result, OpenedSealed::Result::NotARecipient);
  EXPECT_FALSE(fourth.secret);
  EXPECT_EQ(fourth.recipients, 3u);
  EXPECT_FALSE(d.openSealed(sealed));
}

// The value names no recipient: no key's bytes appear in it, and the wraps come in an
// order that does not follow the --to order (each node finds its own by trying).
TEST_F(Sealing, TheValueNamesNoRecipient) {
  const NodeKey a = NodeKey::ephemeral(), b = NodeKey::ephemeral();
  const std::string sealed = sealToMany(Secret("x"), {a.publicKeyText(), b.publicKeyText()});
  const auto bytes = base64Decode(sealed.substr(std::string("sealed:v2:2:").size()));
  ASSERT_TRUE(bytes);
  for (const NodeKey* k : {&a, &b}) {
    const auto pub = k->publicKey();
    const std::string box(pub.box.begin(), pub.box.end());
    const std::string sign(pub.sign.begin(), pub.sign.end());
    EXPECT_EQ(bytes->find(box), std::string::npos);
    EXPECT_EQ(bytes->find(sign), std::string::npos);
  }
}

// Every byte of a many-recipient value counts: a flipped byte anywhere, a changed
// count, a dropped or a swapped-in wrap, never opens.
TEST_F(Sealing, TamperedManyRecipientValueNeverOpens) {
  const NodeKey a = NodeKey::ephemeral(), b = NodeKey::ephemeral();
  const std::string sealed =
      sealToMany(Secret("intact-31"), {a.publicKeyText(), b.publicKeyText()});
  const std::string prefix = "sealed:v2:2:";
  auto bytes = *base64Decode(sealed.substr(prefix.size()));
  for (size_t at = 0; at < bytes.size(); ++at) {
    std::string t = bytes;
    t[at] = static_cast<char>(t[at] ^ 0x01);
    const auto opened = openSealedWith(a, prefix + base64Encode(t));
    EXPECT_FALSE(opened.secret) << "flipped byte " << at;
    EXPECT_NE(opened.result, OpenedSealed::Result::Opened);
  }
  // The count is bound too: the same bytes claimed as 1 or 3 recipients do not open.
  EXPECT_FALSE(openSealedWith(a, "sealed:v2:1:" + sealed.substr(prefix.size())).secret);
  EXPECT_FALSE(openSealedWith(a, "sealed:v2:3:" + sealed.substr(prefix.size())).secret);
  // One wrap dropped (a's or b's: whichever it was, a cannot open it as intact).
  const std::string oneWrap = bytes.substr(kWrapBytes);
  EXPECT_FALSE(openSealedWith(a, "sealed:v2:1:" + base64Encode(oneWrap)).secret);
  EXPECT_FALSE(openSealedWith(b, "sealed:v2:1:" + base64Encode(oneWrap)).secret);
  // A wrap for a third key swapped in for one of them: still bound to the original set.
  const NodeKey c = NodeKey::ephemeral();
  const auto other =
      *base64Decode(sealToMany(Secret("intact-31"), {c.publicKeyText(), a.publicKeyText()})
                        .substr(prefix.size()));
  for (size_t slot = 0; slot < 2; ++slot) {
    std::string t = bytes;
    t.replace(slot * kWrapBytes, kWrapBytes, other.substr(0, kWrapBytes));
    EXPECT_FALSE(openSealedWith(c, prefix + base64Encode(t)).secret) << "slot " << slot;
  }
  // Not sealed values at all.
  for (const char* v : {"sealed:v2:", "sealed:v2:0:AAAA", "sealed:v2:02:AAAA", "sealed:v2:x:AA",
                        "sealed:v2:2:", "sealed:v2:99999999:AAAA"})
    EXPECT_EQ(openSealedWith(a, v).result, OpenedSealed::Result::Malformed) << v;
}

// What older mesh-host printed (crypto_box_seal of the secret itself) still opens.
TEST_F(Sealing, AnOldSingleRecipientValueStillOpens) {
  const NodeKey node = NodeKey::ephemeral();
  const auto pub = node.publicKey();
  const std::string secret = "old-format-secret";
  std::string box(secret.size() + crypto_box_SEALBYTES, '\0');
  crypto_box_seal(reinterpret_cast<unsigned char*>(box.data()),
                  reinterpret_cast<const unsigned char*>(secret.data()), secret.size(),
                  pub.box.data());
  const std::string v1 = "sealed:" + base64Encode(box);
  auto opened = openSealedWith(node, v1);
  ASSERT_EQ(opened.result, OpenedSealed::Result::Opened);
  EXPECT_EQ(plain(*opened.secret), secret);
  ASSERT_TRUE(node.openSealed(v1));
  EXPECT_EQ(openSealedWith(NodeKey::ephemeral(), v1).result, OpenedSealed::Result::NotForThisKey);
}

TEST_F(Sealing, SealToManyRefusesNoKeyAndTheSameKeyTwice) {
  const NodeKey a = NodeKey::ephemeral();
  EXPECT_THROW(sealToMany(Secret("x"), {}), InputError);
  EXPECT_THROW(sealToMany(Secret("x"), {a.publicKeyText(), a.publicKeyText() + "\n"}), InputError);
}

}  // namespace
}  // namespace mesh::trust
