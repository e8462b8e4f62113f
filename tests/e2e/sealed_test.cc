// Sealed credentials: a secret sealed to this node's public key opens on apply and
// lands only in its target; a value sealed to another node, or damaged, fails with
// a reason that says what to do, and nothing is written.
#include <sodium.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "harness.hh"
#include "trust/node_key.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSealedSecret = "sealed-round-trip-secret-7f3a";

class Sealed : public Node {
 protected:
  void SetUp() override {
    Node::SetUp();
    ASSERT_GE(sodium_init(), 0);
    secretFile = work + "/secret.txt";
    std::ofstream(secretFile) << kSealedSecret;
  }

  // This node's public key: the first apply makes the state dir, the key is read
  // (created when missing) with the fleet library.
  std::string nodePublicKey() {
    EXPECT_EQ(apply(declare("node = \"test\"\nempty = true\n", "empty.toml")).code, 0);
    return trust::NodeKey::loadOrCreate(stateDir()).publicKeyText();
  }

  std::string seal(const std::string& pub, const std::string& file) {
    Result r = mesh({"seal", "--to", pub, file});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out.find(kSealedSecret), std::string::npos);
    EXPECT_EQ(r.err.find(kSealedSecret), std::string::npos);
    std::string v = r.out;
    while (!v.empty() && v.back() == '\n') v.pop_back();
    EXPECT_TRUE(v.starts_with("sealed:")) << v;
    return v;
  }

  std::string text(const std::string& sealed) const {
    return "[module.m.credential.key]\npath = \"/etc/m/key\"\nsealed = \"" + sealed +
           "\"\n\n[module.m.file.config]\npath = \"/etc/m/config\"\ncontent = \"a = 1\\n\"\n";
  }

  std::string secretFile;
};

TEST_F(Sealed, RoundTrip) {
  const std::string pub = nodePublicKey();
  ASSERT_TRUE(pub.starts_with("mesh-node:")) << pub;
  const std::string sealed = seal(pub, secretFile);

  Result first = apply(declare(text(sealed)));
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  auto o = outcomeOf(first.json(), "m.key");
  EXPECT_EQ(o["outcome"], "created") << o.dump();
  const std::string wrote = o["wrote"];
  EXPECT_EQ(read("/etc/m/key"), kSealedSecret);
  struct stat st {};
  ASSERT_EQ(::stat(at("/etc/m/key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(first.out.find(kSealedSecret), std::string::npos);

  Result second = apply(declare(text(sealed)));
  ASSERT_EQ(second.code, 0) << second.out << second.err;
  EXPECT_EQ(outcomeOf(second.json(), "m.key")["outcome"], "unchanged");

  // Sealing is randomised, but the keyed digest is of the plaintext: a new
  // ciphertext of the same secret changes nothing on the node.
  const std::string again = seal(pub, secretFile);
  EXPECT_NE(again, sealed);
  Result third = apply(declare(text(again)));
  ASSERT_EQ(third.code, 0) << third.out << third.err;
  auto u = outcomeOf(third.json(), "m.key");
  EXPECT_EQ(u["outcome"], "unchanged") << u.dump();
  EXPECT_EQ(u["wrote"], wrote);

  // The secret may come on stdin too.
  Result piped = runCommand(
      {"sh", "-c",
       std::string(MESH_HOST_BIN) + " seal --to '" + pub + "' - < '" + secretFile + "'"});
  ASSERT_EQ(piped.code, 0) << piped.err;
  ASSERT_TRUE(piped.out.starts_with("sealed:")) << piped.out;
  EXPECT_EQ(piped.out.find(kSealedSecret), std::string::npos);
  std::string fromStdin = piped.out.substr(0, piped.out.find('\n'));
  Result fourth = apply(declare(text(fromStdin)));
  EXPECT_EQ(outcomeOf(fourth.json(), "m.key")["outcome"], "unchanged");
}

TEST_F(Sealed, ValueSealedToAnotherNodeFails) {
  const std::string pub = nodePublicKey();
  const std::string otherDir = work + "/other-node";
  fs::create_directories(otherDir);
  const std::string otherPub = trust::NodeKey::loadOrCreate(otherDir).publicKeyText();
  ASSERT_NE(otherPub, pub);

  Result r = apply(declare(text(seal(otherPub, secretFile))));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto o = outcomeOf(r.json(), "m.key");
  EXPECT_EQ(o["outcome"], "failed") << o.dump();
  const std::string reason = o["reason"];
  EXPECT_NE(reason.find("sealed to another node's key"), std::string::npos) << reason;
  EXPECT_NE(reason.find("this node is " + pub), std::string::npos) << reason;
  EXPECT_NE(reason.find("mesh-host seal --to " + pub), std::string::npos) << reason;
  EXPECT_FALSE(fs::exists(at("/etc/m/key")));
  EXPECT_EQ(outcomeOf(r.json(), "m.config")["outcome"], "created");
  EXPECT_EQ(read("/etc/m/config"), "a = 1\n");
}

TEST_F(Sealed, TamperedValueFailsAndLeavesTheOldSecret) {
  const std::string pub = nodePublicKey();
  const std::string sealed = seal(pub, secretFile);
  ASSERT_EQ(apply(declare(text(sealed))).code, 0);

  std::string tampered = sealed;
  const size_t at = tampered.size() / 2;
  tampered[at] = tampered[at] == 'A' ? 'B' : 'A';
  Result r = apply(declare(text(tampered)));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto o = outcomeOf(r.json(), "m.key");
  EXPECT_EQ(o["outcome"], "failed") << o.dump();
  EXPECT_NE(o["reason"].get<std::string>().find("cannot be opened"), std::string::npos) << o.dump();
  EXPECT_NE(o["reason"].get<std::string>().find("damaged"), std::string::npos) << o.dump();
  EXPECT_EQ(read("/etc/m/key"), kSealedSecret);
}

TEST_F(Sealed, PlanOnANodeWithoutAKeySaysSo) {
  const std::string otherDir = work + "/other-node";
  fs::create_directories(otherDir);
  const std::string otherPub = trust::NodeKey::loadOrCreate(otherDir).publicKeyText();
  Result r = plan(declare(text(seal(otherPub, secretFile))));
  EXPECT_NE(r.code, 0);
  EXPECT_NE((r.out + r.err).find("this node has no key yet"), std::string::npos) << r.out << r.err;
  EXPECT_FALSE(fs::exists(stateDir() + "/node.key")) << "plan must not create the node key";
}

TEST_F(Sealed, SealRefusesABadKeyAndAMissingFile) {
  Result bad = mesh({"seal", "--to", "mesh-node:not-a-key", secretFile});
  EXPECT_EQ(bad.code, 2) << "bad input";
  EXPECT_NE(bad.err.find("is not a node's public key"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.out, "");
  Result missing = mesh({"seal", "--to", "mesh-node:x", work + "/nope"});
  EXPECT_EQ(missing.code, 2) << "bad input";
  EXPECT_NE(missing.err.find("does not exist"), std::string::npos) << missing.err;
  const std::string empty = work + "/empty";
  std::ofstream(empty).close();
  Result nothing = mesh({"seal", "--to", "mesh-node:x", empty});
  EXPECT_EQ(nothing.code, 2) << "bad input";
  EXPECT_NE(nothing.err.find("is empty"), std::string::npos) << nothing.err;
  // blob add of a file that is not there is bad input too.
  Result blob = runCommand({MESH_HOST_BIN, "blob", "add", work + "/nope", "--to", work + "/store"});
  EXPECT_EQ(blob.code, 2) << blob.err;
  EXPECT_NE(blob.err.find("no such file"), std::string::npos) << blob.err;
}

}  // namespace
}  // namespace mesh::e2e
