// Keys and signed declarations (issue 5, docs/trust.md): a node that trusts an
// operator key applies what that key signed, and refuses — exit 2, nothing
// written — an unsigned, tampered, wrongly-signed or replayed declaration.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

mode_t modeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// Writes `text` to `path` with exactly `mode`, whatever the umask.
void writeFile(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  EXPECT_EQ(::chmod(path.c_str(), mode), 0) << path;
}

constexpr uid_t kNobody = 65534;

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class Trust : public Node {
 protected:
  void SetUp() override {
    Node::SetUp();
    keyFile = work + "/operator.key";
    auto r = mesh({"key", "init", "--operator", keyFile});
    ASSERT_EQ(r.code, 0) << r.err;
    pub = trimmed(r.out);
  }

  std::string text(int serial, const std::string& content) const {
    return "serial = " + std::to_string(serial) +
           "\n\n[module.m.file.config]\npath = \"/etc/m/config\"\ncontent = \"" + content + "\"\n";
  }
  // Writes and signs a declaration with `key`; returns its path.
  std::string signedDecl(const std::string& t, const std::string& name,
                         const std::string& key = {}) {
    auto path = declare(t, name);
    auto r = mesh({"sign", "--key", key.empty() ? keyFile : key, path});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(trimmed(r.out), path + ".sig");
    return path;
  }
  Result applyTrusting(const std::string& decl) { return mesh({"apply", decl, "--trust", pub}); }
  // Applies `decl` expecting a refusal that names `why`, with the root untouched.
  // The replay check reads the store; a read-only SQLite reader may touch the
  // WAL index (-shm) and the WAL's ctime, which is no write of ours: those two
  // are left out, and the store's content is compared through generations.
  void expectRefused(const std::string& decl, const std::string& why) {
    const std::vector<std::string> sqliteFiles = {"var/lib/mesh-host/state.db-shm",
                                                  "var/lib/mesh-host/state.db-wal"};
    const auto before = snapshotTree(root, sqliteFiles);
    const bool hadStore = fs::exists(stateDir() + "/state.db");
    const auto generationsBefore = hadStore ? mesh({"generations", "--json"}).out : "";
    auto r = applyTrusting(decl);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("nothing was applied"), std::string::npos) << r.err;
    EXPECT_EQ(snapshotTree(root, sqliteFiles), before);
    if (hadStore) {
      EXPECT_EQ(mesh({"generations", "--json"}).out, generationsBefore);
    }
  }

  std::string keyFile;
  std::string pub;
};

TEST_F(Trust, KeyInitCreatesTheNodeKeyAndShowPrintsIt) {
  auto init = mesh({"key", "init"});
  ASSERT_EQ(init.code, 0) << init.err;
  EXPECT_TRUE(trimmed(init.out).starts_with("mesh-node:")) << init.out;
  EXPECT_EQ(modeOf(stateDir() + "/node.key"), 0600u);
  auto show = mesh({"key", "show"});
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_EQ(show.out, init.out);
  auto again = mesh({"key", "init"});  // kept, not replaced
  EXPECT_EQ(again.out, init.out);
}

TEST_F(Trust, KeyShowWithoutAKeySaysHowToMakeOne) {
  auto show = mesh({"key", "show"});
  EXPECT_EQ(show.code, 2);
  EXPECT_NE(show.err.find("mesh-host key init"), std::string::npos) << show.err;
}

TEST_F(Trust, OperatorKeyIsPrivateAndShowPrintsItsPublicKey) {
  EXPECT_TRUE(pub.starts_with("mesh-op:")) << pub;
  EXPECT_EQ(modeOf(keyFile), 0600u);
  auto show = mesh({"key", "show", "--operator", keyFile});
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_EQ(trimmed(show.out), pub);
  auto again = mesh({"key", "init", "--operator", keyFile});  // never overwritten
  EXPECT_EQ(again.code, 2);
  EXPECT_EQ(trimmed(mesh({"key", "show", "--operator", keyFile}).out), pub);
}

TEST_F(Trust, SignedDeclarationIsApplied) {
  auto decl = signedDecl(text(1, "one"), "decl.toml");
  std::ifstream sig(decl + ".sig");
  std::string sigText((std::istreambuf_iterator<char>(sig)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(sigText.starts_with("mesh-sig:")) << sigText;
  auto r = applyTrusting(decl);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read("/etc/m/config"), "one");
}

TEST_F(Trust, UnsignedDeclarationIsRefused) {
  auto decl = declare(text(1, "one"));
  expectRefused(decl, "is not signed");
  EXPECT_FALSE(fs::exists(at("/etc/m/config")));
}

TEST_F(Trust, TamperedDeclarationIsRefused) {
  auto decl = signedDecl(text(1, "one"), "decl.toml");
  auto t = text(1, "one");
  t[t.find("one")] = 'O';  // one byte, after signing
  declare(t, "decl.toml");
  expectRefused(decl, "tampered");
  EXPECT_FALSE(fs::exists(at("/etc/m/config")));
}

TEST_F(Trust, DeclarationSignedByAnotherKeyIsRefused) {
  const auto otherKey = work + "/other.key";
  ASSERT_EQ(mesh({"key", "init", "--operator", otherKey}).code, 0);
  auto decl = signedDecl(text(1, "one"), "decl.toml", otherKey);
  expectRefused(decl, "which this node does not trust");
  EXPECT_FALSE(fs::exists(at("/etc/m/config")));
}

TEST_F(Trust, OlderSerialIsRefusedAsReplay) {
  auto old = signedDecl(text(3, "three"), "old.toml");
  auto newer = signedDecl(text(5, "five"), "new.toml");
  ASSERT_EQ(applyTrusting(old).code, 0);
  ASSERT_EQ(applyTrusting(newer).code, 0);
  EXPECT_EQ(read("/etc/m/config"), "five");
  expectRefused(old, "serial 3 is older than serial 5");
  EXPECT_EQ(read("/etc/m/config"), "five");
  // The same serial again is a re-apply, not a replay.
  EXPECT_EQ(applyTrusting(newer).code, 0);
  // Going back on purpose is rollback's job.
  auto back = mesh({"rollback", "--trust", pub});
  EXPECT_EQ(back.code, 0) << back.err;
  EXPECT_EQ(read("/etc/m/config"), "three");
}

TEST_F(Trust, TrustedKeyFileInStateDirWorks) {
  fs::create_directories(stateDir() + "/trusted");
  writeFile(stateDir() + "/trusted/ops.pub", pub + "\n", 0644);
  auto unsignedDecl = declare(text(1, "one"), "unsigned.toml");
  const auto before = snapshotTree(root);
  auto refused = mesh({"apply", unsignedDecl});
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("is not signed"), std::string::npos) << refused.err;
  EXPECT_EQ(snapshotTree(root), before);

  auto decl = signedDecl(text(1, "one"), "decl.toml");
  auto r = mesh({"apply", decl});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read("/etc/m/config"), "one");
}

TEST_F(Trust, TrustedKeyGivenAsAFileWorks) {
  writeFile(work + "/ops.pub", pub + "\n", 0644);
  auto decl = signedDecl(text(1, "one"), "decl.toml");
  auto r = mesh({"apply", decl, "--trust", work + "/ops.pub"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read("/etc/m/config"), "one");
}

// Key files are checked like ssh checks its keys (fleet/key_file.hh).

TEST_F(Trust, WorldWritableTrustFileIsRefused) {
  const auto file = work + "/ops.pub";
  writeFile(file, pub + "\n", 0666);
  auto decl = signedDecl(text(1, "one"), "decl.toml");
  const auto before = snapshotTree(root);
  auto r = mesh({"apply", decl, "--trust", file});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("refusing key file " + file + ": writable by group and others (mode 0666)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("chmod 644 " + file), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was applied"), std::string::npos) << r.err;
  EXPECT_EQ(snapshotTree(root), before);
  EXPECT_FALSE(fs::exists(at("/etc/m/config")));

  ASSERT_EQ(::chmod(file.c_str(), 0644), 0);  // the fix the message names
  r = mesh({"apply", decl, "--trust", file});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read("/etc/m/config"), "one");
}

TEST_F(Trust, GroupWritableTrustedKeyInStateDirIsRefused) {
  fs::create_directories(stateDir() + "/trusted");
  const auto file = stateDir() + "/trusted/ops.pub";
  writeFile(file, pub + "\n", 0664);
  auto decl = signedDecl(text(1, "one"), "decl.toml");
  auto r = mesh({"apply", decl});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("refusing key file " + file + ": writable by group (mode 0664)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(at("/etc/m/config")));
}

TEST_F(Trust, NodeKeyReadableByOthersIsRefused) {
  auto init = mesh({"key", "init"});
  ASSERT_EQ(init.code, 0) << init.err;
  const auto nodeKey = stateDir() + "/node.key";
  ASSERT_EQ(::chmod(nodeKey.c_str(), 0644), 0);
  const std::string why = "refusing private key file " + nodeKey +
                          ": readable by group and others (mode 0644): an unprotected private key";

  auto show = mesh({"key", "show"});
  EXPECT_EQ(show.code, 1) << show.out << show.err;
  EXPECT_NE(show.err.find(why), std::string::npos) << show.err;
  EXPECT_NE(show.err.find("chmod 600 " + nodeKey), std::string::npos) << show.err;
  auto again = mesh({"key", "init"});  // refused, and never replaced by a new key
  EXPECT_EQ(again.code, 1) << again.err;
  EXPECT_NE(again.err.find(why), std::string::npos) << again.err;

  // A credential needs the node key: it fails, with the reason, and is not written.
  writeFile(work + "/secret", "s3cret", 0600);
  auto decl =
      declare("[module.m.credential.key]\npath = \"/etc/m/key\"\nfrom = \"" + work + "/secret\"\n");
  auto r = apply(decl);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto o = outcomeOf(r.json(), "m.key");
  EXPECT_EQ(o["outcome"], "failed") << o.dump();
  EXPECT_NE(o["reason"].get<std::string>().find(why), std::string::npos) << o.dump();
  EXPECT_FALSE(fs::exists(at("/etc/m/key")));

  ASSERT_EQ(::chmod(nodeKey.c_str(), 0600), 0);
  show = mesh({"key", "show"});
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_EQ(show.out, init.out);
  r = apply(decl);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(read("/etc/m/key"), "s3cret");
}

TEST_F(Trust, KeyOwnedByAnotherUserIsRefused) {
  // The operator key (sign --key).
  ASSERT_EQ(::chown(keyFile.c_str(), kNobody, static_cast<gid_t>(-1)), 0);
  auto decl = declare(text(1, "one"));
  auto r = mesh({"sign", "--key", keyFile, decl});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("refusing private key file " + keyFile + ": owned by uid 65534"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("chown root " + keyFile), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(decl + ".sig"));
  ASSERT_EQ(::chown(keyFile.c_str(), 0, static_cast<gid_t>(-1)), 0);
  decl = signedDecl(text(1, "one"), "decl.toml");

  // A --trust file.
  const auto file = work + "/ops.pub";
  writeFile(file, pub + "\n", 0644);
  ASSERT_EQ(::chown(file.c_str(), kNobody, static_cast<gid_t>(-1)), 0);
  r = mesh({"apply", decl, "--trust", file});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("refusing key file " + file + ": owned by uid 65534"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(at("/etc/m/config")));

  // The node key.
  ASSERT_EQ(mesh({"key", "init"}).code, 0);
  const auto nodeKey = stateDir() + "/node.key";
  ASSERT_EQ(::chown(nodeKey.c_str(), kNobody, static_cast<gid_t>(-1)), 0);
  auto show = mesh({"key", "show"});
  EXPECT_EQ(show.code, 1) << show.err;
  EXPECT_NE(show.err.find("refusing private key file " + nodeKey + ": owned by uid 65534"),
            std::string::npos)
      << show.err;
}

TEST_F(Trust, SymlinkedKeyIsRefused) {
  // --trust through a link to a good file.
  const auto file = work + "/ops.pub";
  writeFile(file, pub + "\n", 0644);
  fs::create_symlink(file, work + "/link.pub");
  auto decl = signedDecl(text(1, "one"), "decl.toml");
  auto r = mesh({"apply", decl, "--trust", work + "/link.pub"});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(work + "/link.pub: it is a symbolic link"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(at("/etc/m/config")));

  // An operator key through a link.
  fs::create_symlink(keyFile, work + "/link.key");
  r = mesh({"sign", "--key", work + "/link.key", decl});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(work + "/link.key: it is a symbolic link"), std::string::npos) << r.err;

  // node.key as a link.
  ASSERT_EQ(mesh({"key", "init"}).code, 0);
  const auto nodeKey = stateDir() + "/node.key";
  fs::rename(nodeKey, work + "/node.key");
  fs::create_symlink(work + "/node.key", nodeKey);
  auto show = mesh({"key", "show"});
  EXPECT_EQ(show.code, 1) << show.err;
  EXPECT_NE(show.err.find(nodeKey + ": it is a symbolic link"), std::string::npos) << show.err;
}

TEST_F(Trust, WithoutTrustedKeysNoSignatureIsNeeded) {
  auto r = mesh({"apply", declare(text(1, "one"))});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read("/etc/m/config"), "one");
}

}  // namespace
}  // namespace mesh::e2e
