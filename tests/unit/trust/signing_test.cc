// Operator keys and detached signatures (docs/trust.md): a round trip, and every
// way a signature or key file can be wrong.
#include "trust/signing.hh"

#include <gtest/gtest.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "key_dir_test.hh"
#include "util/error.hh"

namespace mesh::trust {
namespace {

namespace fs = std::filesystem;

// Key files are written with exact modes: they are checked (trust/key_file.hh).
using Signing = KeyDirTest;

const std::string kDecl = "serial = 1\n[module.m.file.x]\npath = \"/x\"\ncontent = \"x\"\n";

TEST_F(Signing, RoundTrip) {
  auto key = OperatorKey::generate();
  const auto sig = parseSignature(signatureText(key, kDecl), "decl.sig");
  EXPECT_EQ(sig.signer, key.publicKey());
  EXPECT_TRUE(signatureMatches(sig, kDecl));

  const auto path = write("decl.toml", kDecl);
  write("decl.toml.sig", signatureText(key, kDecl));
  auto signer = verifyDeclaration(path, kDecl, {key.publicKey()});
  ASSERT_TRUE(signer.has_value());
  EXPECT_EQ(*signer, key.publicKey());
}

TEST_F(Signing, PublicKeyTextRoundTrips) {
  auto key = OperatorKey::generate();
  const auto text = key.publicKey().text();
  EXPECT_TRUE(text.starts_with("mesh-op:"));
  EXPECT_EQ(OperatorPublicKey::parse(" " + text + "\n", "x"), key.publicKey());
}

TEST_F(Signing, EveryTamperedByteIsDetected) {
  auto key = OperatorKey::generate();
  const auto sig = parseSignature(signatureText(key, kDecl), "decl.sig");
  for (size_t i = 0; i < kDecl.size(); ++i) {
    auto changed = kDecl;
    changed[i] ^= 0x01;
    EXPECT_FALSE(signatureMatches(sig, changed)) << "byte " << i;
  }
  EXPECT_FALSE(signatureMatches(sig, kDecl + "\n"));
  EXPECT_FALSE(signatureMatches(sig, kDecl.substr(1)));

  const auto path = write("decl.toml", kDecl);
  write("decl.toml.sig", signatureText(key, kDecl));
  auto msg = errorOf([&] { verifyDeclaration(path, kDecl + "#", {key.publicKey()}); });
  EXPECT_NE(msg.find("does not match its content (tampered?)"), std::string::npos) << msg;
}

TEST_F(Signing, WrongKeyIsNotTrusted) {
  auto signer = OperatorKey::generate();
  auto trusted = OperatorKey::generate();
  const auto path = write("decl.toml", kDecl);
  write("decl.toml.sig", signatureText(signer, kDecl));
  auto msg = errorOf([&] { verifyDeclaration(path, kDecl, {trusted.publicKey()}); });
  EXPECT_NE(msg.find("signed by " + signer.publicKey().text() + " which this node does not trust"),
            std::string::npos)
      << msg;
}

TEST_F(Signing, SignatureClaimingATrustedKeyButMadeByAnotherIsTampered) {
  auto trusted = OperatorKey::generate();
  auto other = OperatorKey::generate();
  auto forged = parseSignature(signatureText(other, kDecl), "x");
  forged.signer = trusted.publicKey();
  EXPECT_FALSE(signatureMatches(forged, kDecl));
}

TEST_F(Signing, UnsignedWhenTrustingIsRefused) {
  auto key = OperatorKey::generate();
  const auto path = write("decl.toml", kDecl);
  auto msg = errorOf([&] { verifyDeclaration(path, kDecl, {key.publicKey()}); });
  EXPECT_NE(msg.find("is not signed (no " + path + ".sig)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("mesh-host sign"), std::string::npos) << msg;
}

TEST_F(Signing, NothingTrustedNeedsNoSignature) {
  const auto path = write("decl.toml", kDecl);
  EXPECT_FALSE(verifyDeclaration(path, kDecl, {}).has_value());
}

TEST_F(Signing, MalformedSignatureFilesAreRefused) {
  auto key = OperatorKey::generate();
  const auto good = signatureText(key, kDecl);
  for (const std::string& bad : std::vector<std::string>{
           std::string(), std::string("garbage"), std::string("mesh-sig:"),
           std::string("mesh-sig:abc:def"), good.substr(0, good.size() - 6),
           "mesh-sig:" + good.substr(good.find(':', 9) + 1), good.substr(0, good.find(':', 9) + 1),
           "mesh-sog" + good.substr(8)}) {
    auto msg = errorOf([&] { (void)parseSignature(bad, "decl.toml.sig"); });
    EXPECT_NE(msg.find("decl.toml.sig: not a mesh-host signature"), std::string::npos)
        << "for '" << bad << "': " << msg;
  }
}

TEST_F(Signing, MalformedPublicKeysAreRefused) {
  for (const char* bad : {"", "mesh-op:", "mesh-node:AAAA", "mesh-op:AAAA", "mesh-op:!!"}) {
    auto msg = errorOf([&] { (void)OperatorPublicKey::parse(bad, "--trust x"); });
    EXPECT_NE(msg.find("--trust x: not an operator public key"), std::string::npos) << msg;
  }
}

TEST_F(Signing, OperatorKeyFileRoundTripsWithMode0600) {
  const auto path = dir + "/op.key";
  auto key = OperatorKey::generate();
  key.saveNew(path);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(OperatorKey::load(path).publicKey(), key.publicKey());
  auto msg = errorOf([&] { OperatorKey::generate().saveNew(path); });
  EXPECT_NE(msg.find("already exists"), std::string::npos) << msg;
  EXPECT_EQ(OperatorKey::load(path).publicKey(), key.publicKey());
}

TEST_F(Signing, MalformedOperatorKeyFilesAreRefused) {
  for (const char* bad :
       {"", "mesh-host operator key v1\n", "mesh-host operator key v1\nAAAA\n",
        "mesh-host node key v1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"}) {
    const auto path = write("bad.key", bad, 0600);
    auto msg = errorOf([&] { OperatorKey::load(path); });
    EXPECT_NE(msg.find("is not a mesh-host operator key"), std::string::npos) << msg;
  }
  auto msg = errorOf([&] { OperatorKey::load(dir + "/missing.key"); });
  EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
}

TEST_F(Signing, TrustedKeysFromOptionsFilesAndStateDir) {
  auto a = OperatorKey::generate();
  auto b = OperatorKey::generate();
  auto c = OperatorKey::generate();
  const auto bFile = write("b.pub", b.publicKey().text() + "\n");
  fs::create_directories(dir + "/state/trusted");
  write("state/trusted/c.pub", c.publicKey().text() + "\n");
  write("state/trusted/ignored.txt", "not a key\n", 0666);  // not a .pub: not read at all
  auto keys = loadTrustedKeys({a.publicKey().text(), bFile, a.publicKey().text()}, dir + "/state");
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys[0], a.publicKey());
  EXPECT_EQ(keys[1], b.publicKey());
  EXPECT_EQ(keys[2], c.publicKey());
  EXPECT_TRUE(loadTrustedKeys({}, dir + "/nowhere").empty());

  auto msg = errorOf([&] { loadTrustedKeys({dir + "/missing.pub"}, dir + "/nowhere"); });
  EXPECT_NE(msg.find("neither a key"), std::string::npos) << msg;
  write("state/trusted/bad.pub", "mesh-op:nope\n");
  msg = errorOf([&] { loadTrustedKeys({}, dir + "/state"); });
  EXPECT_NE(msg.find("bad.pub: not an operator public key"), std::string::npos) << msg;
}

}  // namespace
}  // namespace mesh::trust
