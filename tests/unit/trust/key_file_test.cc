// Key files are checked the way ssh checks its keys (fleet/key_file.hh): a key
// file someone else could have written, a private key others can read, one owned
// by another user, a symbolic link or a non-file is refused with a message that
// names the file, the fault and the fix — for every kind of key mesh-host reads.
#include "trust/key_file.hh"

#include <gtest/gtest.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "key_dir_test.hh"
#include "trust/node_key.hh"
#include "trust/operator_key.hh"
#include "trust/signing.hh"
#include "util/error.hh"

namespace mesh::trust {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

class KeyFile : public KeyDirTest {
 protected:
  static bool isRoot() { return ::geteuid() == 0; }
};

struct stat statWith(mode_t mode, uid_t uid) {
  struct stat st {};
  st.st_mode = mode;
  st.st_uid = uid;
  return st;
}

TEST_F(KeyFile, GoodFilesAreRead) {
  EXPECT_EQ(readKeyFile(write("priv", "secret\n", 0600), KeyFileKind::Private), "secret\n");
  EXPECT_EQ(readKeyFile(write("priv4", "secret\n", 0400), KeyFileKind::Private), "secret\n");
  EXPECT_EQ(readKeyFile(write("pub", "public\n", 0644), KeyFileKind::Public), "public\n");
  EXPECT_EQ(readKeyFile(write("pub6", "public\n", 0600), KeyFileKind::Public), "public\n");
  EXPECT_FALSE(readKeyFile(dir + "/missing", KeyFileKind::Private).has_value());
  EXPECT_FALSE(readKeyFile(dir + "/missing", KeyFileKind::Public).has_value());
}

TEST_F(KeyFile, PrivateKeyReadableByOthersIsRefused) {
  for (mode_t mode : {0644, 0640, 0604, 0660, 0610}) {
    const auto path = write("node.key", "secret\n", mode);
    auto msg = errorOf([&] { readKeyFile(path, KeyFileKind::Private); });
    EXPECT_NE(msg.find("refusing private key file " + path), std::string::npos) << msg;
    EXPECT_NE(msg.find(fmt::format("(mode {:04o})", mode)), std::string::npos) << msg;
    EXPECT_NE(msg.find("unprotected private key"), std::string::npos) << msg;
    EXPECT_NE(msg.find("chmod 600 " + path), std::string::npos) << msg;
  }
  auto msg = errorOf([&] { readKeyFile(write("k", "x", 0644), KeyFileKind::Private); });
  EXPECT_NE(msg.find("readable by group and others (mode 0644)"), std::string::npos) << msg;
  msg = errorOf([&] { readKeyFile(write("k", "x", 0660), KeyFileKind::Private); });
  EXPECT_NE(msg.find("readable and writable by group (mode 0660)"), std::string::npos) << msg;
}

TEST_F(KeyFile, PublicKeyWritableByOthersIsRefused) {
  for (mode_t mode : {0666, 0664, 0646, 0620, 0602}) {
    const auto path = write("ops.pub", "mesh-op:x\n", mode);
    auto msg = errorOf([&] { readKeyFile(path, KeyFileKind::Public); });
    EXPECT_NE(msg.find("refusing key file " + path), std::string::npos) << msg;
    EXPECT_NE(msg.find(fmt::format("(mode {:04o})", mode)), std::string::npos) << msg;
    EXPECT_NE(msg.find("chmod 644 " + path), std::string::npos) << msg;
  }
  auto msg = errorOf([&] { readKeyFile(write("k", "x", 0666), KeyFileKind::Public); });
  EXPECT_NE(msg.find("writable by group and others (mode 0666)"), std::string::npos) << msg;
}

TEST_F(KeyFile, KeyOwnedByAnotherUserIsRefused) {
  if (!isRoot()) GTEST_SKIP() << "chown to another user needs root";
  for (auto kind : {KeyFileKind::Private, KeyFileKind::Public}) {
    const auto path = write("other.key", "secret\n", 0600);
    ASSERT_EQ(::chown(path.c_str(), kNobody, static_cast<gid_t>(-1)), 0);
    auto msg = errorOf([&] { readKeyFile(path, kind); });
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("owned by uid 65534"), std::string::npos) << msg;
    EXPECT_NE(msg.find("chown root " + path), std::string::npos) << msg;
  }
  // Both faults at once, both fixes.
  const auto path = write("both.key", "secret\n", 0666);
  ASSERT_EQ(::chown(path.c_str(), kNobody, static_cast<gid_t>(-1)), 0);
  ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
  auto msg = errorOf([&] { readKeyFile(path, KeyFileKind::Private); });
  EXPECT_NE(msg.find("chown root " + path + " && chmod 600 " + path), std::string::npos) << msg;
}

TEST_F(KeyFile, OwnerMayBeRootOrTheRunningUser) {
  const auto file = S_IFREG | 0600;
  EXPECT_FALSE(keyFileFault(statWith(file, 0), "k", KeyFileKind::Private, 0));
  EXPECT_FALSE(keyFileFault(statWith(file, 0), "k", KeyFileKind::Private, 1001));
  EXPECT_FALSE(keyFileFault(statWith(file, 1001), "k", KeyFileKind::Private, 1001));
  auto fault = keyFileFault(statWith(file, 1002), "/k", KeyFileKind::Public, 1001);
  ASSERT_TRUE(fault);
  EXPECT_NE(fault->find("owned by uid 1002, neither root nor the user running mesh-host (uid "
                        "1001)"),
            std::string::npos)
      << *fault;
  fault = keyFileFault(statWith(file, 1001), "/k", KeyFileKind::Private, 0);
  ASSERT_TRUE(fault);
  EXPECT_NE(fault->find("owned by uid 1001, not by root; fix it with: chown root /k"),
            std::string::npos)
      << *fault;
  fault = keyFileFault(statWith(file, 1001), "/my keys/k", KeyFileKind::Private, 0);
  ASSERT_TRUE(fault);
  EXPECT_NE(fault->find("chown root '/my keys/k'"), std::string::npos) << *fault;
}

TEST_F(KeyFile, SymbolicLinkIsRefusedEvenToAGoodFile) {
  const auto target = write("real.key", "secret\n", 0600);
  const auto link = dir + "/link.key";
  fs::create_symlink(target, link);
  for (auto kind : {KeyFileKind::Private, KeyFileKind::Public}) {
    auto msg = errorOf([&] { readKeyFile(link, kind); });
    EXPECT_NE(msg.find(link + ": it is a symbolic link"), std::string::npos) << msg;
  }
  // A dangling link is refused too, not taken for a missing key.
  fs::create_symlink(dir + "/nowhere", dir + "/dangling.key");
  auto msg = errorOf([&] { readKeyFile(dir + "/dangling.key", KeyFileKind::Private); });
  EXPECT_NE(msg.find("symbolic link"), std::string::npos) << msg;
}

TEST_F(KeyFile, NonFilesAreRefusedWithoutHanging) {
  fs::create_directory(dir + "/d.pub");
  auto msg = errorOf([&] { readKeyFile(dir + "/d.pub", KeyFileKind::Public); });
  EXPECT_NE(msg.find("it is a directory"), std::string::npos) << msg;
  ASSERT_EQ(::mkfifo((dir + "/fifo.key").c_str(), 0600), 0);
  msg = errorOf([&] { readKeyFile(dir + "/fifo.key", KeyFileKind::Private); });
  EXPECT_NE(msg.find("it is a FIFO"), std::string::npos) << msg;
}

// Every place a key is read uses the check.

TEST_F(KeyFile, OperatorKeyFileIsChecked) {
  const auto path = dir + "/op.key";
  auto key = OperatorKey::generate();
  key.saveNew(path);  // what key init makes passes
  EXPECT_EQ(OperatorKey::load(path).publicKey(), key.publicKey());
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  auto msg = errorOf([&] { OperatorKey::load(path); });
  EXPECT_NE(msg.find("refusing private key file " + path), std::string::npos) << msg;
  EXPECT_NE(msg.find("chmod 600 " + path), std::string::npos) << msg;
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  fs::create_symlink(path, dir + "/link.key");
  msg = errorOf([&] { OperatorKey::load(dir + "/link.key"); });
  EXPECT_NE(msg.find("symbolic link"), std::string::npos) << msg;
}

TEST_F(KeyFile, NodeKeyIsCheckedAndAFailureNotBadInput) {
  const auto made = NodeKey::loadOrCreate(dir);
  const auto path = dir + "/node.key";
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_TRUE(NodeKey::load(dir));
  EXPECT_EQ(NodeKey::load(dir)->publicKeyText(), made.publicKeyText());

  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  auto msg = errorOf<Error>([&] { NodeKey::load(dir); });
  EXPECT_NE(msg.find("refusing private key file " + path), std::string::npos) << msg;
  EXPECT_NE(msg.find("(mode 0644)"), std::string::npos) << msg;
  try {
    NodeKey::load(dir);
  } catch (const InputError&) {
    ADD_FAILURE() << "the node's own key file is not the operator's input";
  } catch (const Error&) {
  }
  // Not replaced by a new key either: loadOrCreate refuses as load does.
  msg = errorOf<Error>([&] { NodeKey::loadOrCreate(dir); });
  EXPECT_NE(msg.find("refusing private key file"), std::string::npos) << msg;
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  EXPECT_EQ(NodeKey::load(dir)->publicKeyText(), made.publicKeyText());

  fs::rename(path, dir + "/real.key");
  fs::create_symlink(dir + "/real.key", path);
  msg = errorOf<Error>([&] { NodeKey::load(dir); });
  EXPECT_NE(msg.find(path + ": it is a symbolic link"), std::string::npos) << msg;
}

TEST_F(KeyFile, TrustedKeyFilesAreChecked) {
  const auto pub = OperatorKey::generate().publicKey();
  const auto file = write("ops.pub", pub.text() + "\n", 0644);
  ASSERT_EQ(loadTrustedKeys({file}, dir + "/nowhere").size(), 1u);
  ASSERT_EQ(::chmod(file.c_str(), 0666), 0);
  auto msg = errorOf([&] { loadTrustedKeys({file}, dir + "/nowhere"); });
  EXPECT_NE(msg.find("refusing key file " + file), std::string::npos) << msg;
  EXPECT_NE(msg.find("(mode 0666)"), std::string::npos) << msg;
  ASSERT_EQ(::chmod(file.c_str(), 0644), 0);

  fs::create_directories(dir + "/state/trusted");
  const auto inState = dir + "/state/trusted/ops.pub";
  fs::copy_file(file, inState);
  ASSERT_EQ(::chmod(inState.c_str(), 0644), 0);
  ASSERT_EQ(loadTrustedKeys({}, dir + "/state").size(), 1u);
  ASSERT_EQ(::chmod(inState.c_str(), 0646), 0);
  msg = errorOf([&] { loadTrustedKeys({}, dir + "/state"); });
  EXPECT_NE(msg.find("refusing key file " + inState), std::string::npos) << msg;
  EXPECT_NE(msg.find("chmod 644 " + inState), std::string::npos) << msg;
  ASSERT_EQ(::chmod(inState.c_str(), 0644), 0);

  fs::create_symlink(file, dir + "/state/trusted/link.pub");
  msg = errorOf([&] { loadTrustedKeys({}, dir + "/state"); });
  EXPECT_NE(msg.find("link.pub: it is a symbolic link"), std::string::npos) << msg;
}

}  // namespace
}  // namespace mesh::trust
