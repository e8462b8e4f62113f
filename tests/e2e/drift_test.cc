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

// Drift among many files: a cycle of this many looks at its files ahead of
// itself on a second thread (apply/look_ahead.hh); what was changed by hand is
// still found and repaired, and nothing else is touched.
class DriftAmongMany : public Node {
 protected:
  static constexpr int kFiles = 300;  // over LookAhead::kFewest
  static std::string pathOf(int i) {
    return "/srv/many/d" + std::to_string(i % 3) + "/f" + std::to_string(1000 + i);
  }
  void SetUp() override {
    Node::SetUp();
    std::string text;
    for (int i = 0; i < kFiles; ++i)
      text += "[module.m.file.f" + std::to_string(i) + "]\npath = \"" + pathOf(i) +
              "\"\ncontent = \"" + std::to_string(1000 + i) + "\\n\"\n\n";
    decl = declare(text);
    Result first = apply(decl);
    ASSERT_EQ(first.code, 0) << first.out << first.err;
    ASSERT_EQ(first.json()["summary"]["created"], kFiles) << first.out;
  }
  std::string decl;
};

TEST_F(DriftAmongMany, WhatWasChangedByHandIsRepairedAndNothingElseTouched) {
  Result noop = apply(decl);
  ASSERT_EQ(noop.code, 0) << noop.out << noop.err;
  EXPECT_EQ(noop.json()["summary"]["unchanged"], kFiles) << noop.out;
  struct stat before {};
  ASSERT_EQ(::lstat(at(pathOf(7)).c_str(), &before), 0);

  write(pathOf(10), "9999\n");  // the same size
  fs::remove(at(pathOf(150)));
  ASSERT_EQ(::chmod(at(pathOf(200)).c_str(), 0600), 0);
  fs::remove(at(pathOf(250)));
  fs::create_symlink("/etc/hostname", at(pathOf(250)));

  Result r = apply(decl);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = r.json();
  EXPECT_EQ(j["summary"]["unchanged"], kFiles - 4) << r.out;
  EXPECT_EQ(outcomeOf(j, "m.f10")["reason"], "drift: content changed");
  EXPECT_EQ(outcomeOf(j, "m.f150")["outcome"], "created");
  EXPECT_EQ(outcomeOf(j, "m.f200")["outcome"], "updated");
  EXPECT_EQ(outcomeOf(j, "m.f250")["reason"], "drift: a symbolic link replaced it");
  EXPECT_EQ(read(pathOf(10)), "1010\n");
  EXPECT_EQ(read(pathOf(150)), "1150\n");
  EXPECT_EQ(read(pathOf(250)), "1250\n");
  struct stat after {};
  ASSERT_EQ(::lstat(at(pathOf(7)).c_str(), &after), 0);  // not rewritten
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_ctim.tv_nsec, before.st_ctim.tv_nsec);

  Result again = apply(decl);
  EXPECT_EQ(again.json()["summary"]["unchanged"], kFiles) << again.out;
}

// A file's parent swapped for a link between cycles: refused, as with few files.
TEST_F(DriftAmongMany, AParentSwappedForALinkIsRefused) {
  fs::rename(at("/srv/many/d1"), at("/srv/many/elsewhere"));
  fs::create_directory_symlink(at("/srv/many/elsewhere"), at("/srv/many/d1"));
  Result r = apply(decl);
  const auto j = r.json();
  EXPECT_EQ(j["summary"]["failed"], kFiles / 3) << r.out;
  EXPECT_EQ(j["summary"]["unchanged"], kFiles - kFiles / 3) << r.out;
  EXPECT_NE(outcomeOf(j, "m.f1")["reason"].get<std::string>().find("symbolic link"),
            std::string::npos)
      << outcomeOf(j, "m.f1").dump();
}

}  // namespace
}  // namespace mesh::e2e
