// Changes made behind mesh-host's back are drift: repaired, reported `updated`
// (or `created` when the thing is gone) with reason drift, then `unchanged`.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "every_kind.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

class Drift : public EveryKind {
 protected:
  void SetUp() override {
    EveryKind::SetUp();
    ASSERT_EQ(apply(declPath).code, 0);
  }

  void expectRepaired(const std::string& id, const std::string& verdict = "updated") {
    Result r = apply(declPath);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    auto o = outcomeOf(r.json(), id);
    EXPECT_EQ(o["outcome"], verdict) << o.dump();
    EXPECT_TRUE(o["reason"].get<std::string>().starts_with("drift")) << o.dump();
    Result again = apply(declPath);
    auto j = again.json();
    EXPECT_EQ(j["summary"]["unchanged"], 5) << again.out;
  }
};

TEST_F(Drift, FileContent) {
  write("/etc/m/config", "listen = 2\n");
  expectRepaired("m.config");
  EXPECT_EQ(read("/etc/m/config"), "listen = 1\n");
}

TEST_F(Drift, FileContentSameSize) {
  // Same size: only the fingerprint (ctime) and the hash can see it.
  write("/etc/m/config", "listen = 9\n");
  expectRepaired("m.config");
  EXPECT_EQ(read("/etc/m/config"), "listen = 1\n");
}

TEST_F(Drift, FileDeletedIsCreatedAgain) {
  fs::remove(at("/etc/m/config"));
  expectRepaired("m.config", "created");
  EXPECT_EQ(read("/etc/m/config"), "listen = 1\n");
}

TEST_F(Drift, Mode) {
  ASSERT_EQ(::chmod(at("/etc/m/config").c_str(), 0600), 0);
  expectRepaired("m.config");
  struct stat st {};
  ASSERT_EQ(::lstat(at("/etc/m/config").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

TEST_F(Drift, DirectoryMode) {
  ASSERT_EQ(::chmod(at("/etc/m").c_str(), 0700), 0);
  expectRepaired("m.etc");
}

TEST_F(Drift, Owner) {
  if (::geteuid() != 0) GTEST_SKIP() << "changing owners needs root";
  // The credential declares no owner; declare one to manage it.
  declPath = declare(text() +
                     "\n[module.m.file.owned]\npath = \"/etc/m/owned\"\ncontent = \"x\"\n"
                     "owner = \"0\"\ngroup = \"0\"\n");
  ASSERT_EQ(apply(declPath).code, 0);
  ASSERT_EQ(::lchown(at("/etc/m/owned").c_str(), 4242, 4242), 0);
  Result r = apply(declPath);
  auto o = outcomeOf(r.json(), "m.owned");
  EXPECT_EQ(o["outcome"], "updated") << o.dump();
  EXPECT_TRUE(o["reason"].get<std::string>().starts_with("drift: owner")) << o.dump();
  struct stat st {};
  ASSERT_EQ(::lstat(at("/etc/m/owned").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_gid, 0u);
}

TEST_F(Drift, CredentialContent) {
  write("/etc/m/key", "guessed");
  expectRepaired("m.key");
  EXPECT_EQ(read("/etc/m/key"), kSecret);
}

TEST_F(Drift, LinkTarget) {
  fs::remove(at("/opt/m/current"));
  fs::create_symlink("/elsewhere", at("/opt/m/current"));
  expectRepaired("m.current");
  EXPECT_EQ(fs::read_symlink(at("/opt/m/current")).string(), "/opt/m/app");
}

TEST_F(Drift, FileInsideArchiveEdited) {
  write("/opt/m/app/etc/conf", "a = 2\n");
  expectRepaired("m.app");
  EXPECT_EQ(read("/opt/m/app/etc/conf"), "a = 1\n");
}

TEST_F(Drift, FileInsideArchiveDeleted) {
  fs::remove(at("/opt/m/app/bin/tool"));
  expectRepaired("m.app");
  EXPECT_EQ(read("/opt/m/app/bin/tool"), "#!/bin/sh\necho tool\n");
}

TEST_F(Drift, FileAddedInsideArchive) {
  write("/opt/m/app/stray", "x");
  expectRepaired("m.app");
  EXPECT_FALSE(fs::exists(at("/opt/m/app/stray")));
}

}  // namespace
}  // namespace mesh::e2e
