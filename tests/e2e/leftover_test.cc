// A write a kill cut short leaves its temp file behind (for a credential, a
// plaintext copy of the secret): the next cycle sweeps it, whether or not it
// has anything to write there itself.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

class Leftover : public Node {
 protected:
  void SetUp() override {
    Node::SetUp();
    secretFile = work + "/secret";
    setSecret("first-secret");
  }
  void setSecret(const std::string& value) { std::ofstream(secretFile, std::ios::trunc) << value; }
  std::string decl() {
    return declare(
        fmt::format("[module.m.credential.key]\npath = \"/etc/m/key\"\nfrom = \"{}\"\n"
                    "[module.m.file.conf]\npath = \"/etc/m/conf\"\ncontent = \"a\"\n",
                    secretFile));
  }
  // Every ".mesh-" entry under the root.
  std::vector<std::string> leftovers() const {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(root))
      if (e.path().filename().string().starts_with(".mesh-")) out.push_back(e.path());
    return out;
  }
  std::string secretFile;
};

TEST_F(Leftover, ACrashBeforeTheRenameLeavesATempFileTheNextCycleSweeps) {
  const auto d = decl();
  ASSERT_EQ(apply(d).code, 0);
  setSecret("second-secret");
  Result crashed = mesh({"apply", d}, {{"MESH_HOST_CRASH_AT", "before-rename"}});
  ASSERT_EQ(crashed.code, 86) << crashed.out << crashed.err;
  ASSERT_EQ(leftovers().size(), 1u);  // the point of the test: there is one to sweep
  EXPECT_EQ(read("/etc/m/key"), "first-secret");

  // The operator reverts: nothing to write at the credential's path, yet the
  // plaintext copy of "second-secret" must go.
  setSecret("first-secret");
  Result r = apply(d);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "m.key")["outcome"], "unchanged");
  EXPECT_TRUE(leftovers().empty()) << leftovers().front();
}

// Files are written in batches (util/write_batch.hh): every temp file, one sync,
// every rename, the directories synced, then the records. A declaration of
// many files in a few directories, each file's content naming the version.
class Batch : public Leftover {
 protected:
  static constexpr int kFiles = 30;
  std::string batchDecl(const std::string& version) {
    std::string text;
    for (int i = 0; i < kFiles; ++i)
      text +=
          fmt::format("[module.b.file.f{0}]\npath = \"/srv/d{1}/f{0}\"\ncontent = \"{2} {0}\"\n", i,
                      i % 3, version);
    return declare(text, version + ".toml");
  }
  // How many of the files hold `version`; every other one must hold `other`.
  int holding(const std::string& version, const std::string& other) const {
    int n = 0;
    for (int i = 0; i < kFiles; ++i) {
      const std::string held = read(fmt::format("/srv/d{}/f{}", i % 3, i));
      if (held == fmt::format("{} {}", version, i))
        ++n;
      else
        EXPECT_EQ(held, fmt::format("{} {}", other, i)) << "f" << i << " is neither";
    }
    return n;
  }
};

// A kill after the temp files are written and synced, before any rename: every
// file is old, the temp files are swept by the next cycle, which writes them all.
TEST_F(Batch, AKillBetweenTheTempFilesAndTheRenamesLeavesEveryFileOld) {
  ASSERT_EQ(apply(batchDecl("v1")).code, 0);
  const auto v2 = batchDecl("v2");
  Result crashed = mesh({"apply", v2}, {{"MESH_HOST_CRASH_AT", "before-rename"}});
  ASSERT_EQ(crashed.code, 86) << crashed.out << crashed.err;
  EXPECT_EQ(holding("v1", "v2"), kFiles);
  EXPECT_EQ(leftovers().size(), static_cast<size_t>(kFiles));  // the window this test is about

  Result r = apply(v2);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.json()["summary"]["updated"], kFiles) << r.out;
  EXPECT_EQ(holding("v2", "v1"), kFiles);
  EXPECT_TRUE(leftovers().empty()) << leftovers().front();
}

// A kill after every rename, before the records: every file is new and whole,
// nothing is left behind, and the next cycle finds them as wanted.
TEST_F(Batch, AKillBetweenTheRenamesAndTheRecordsLeavesEveryFileNew) {
  ASSERT_EQ(apply(batchDecl("v1")).code, 0);
  const auto v2 = batchDecl("v2");
  Result crashed = mesh({"apply", v2}, {{"MESH_HOST_CRASH_AT", "batch-in-place"}});
  ASSERT_EQ(crashed.code, 86) << crashed.out << crashed.err;
  EXPECT_EQ(holding("v2", "v1"), kFiles);
  EXPECT_TRUE(leftovers().empty()) << leftovers().front();

  Result r = apply(v2);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.json()["summary"]["unchanged"], kFiles) << r.out;
  EXPECT_EQ(holding("v2", "v1"), kFiles);
}

// A first apply killed in the batch's window, from an empty target: each file is
// there whole or not at all, and the next cycle completes it.
TEST_F(Batch, AFirstApplyKilledInTheBatchIsCompletedByTheNext) {
  for (const char* point : {"before-rename", "batch-in-place"}) {
    SCOPED_TRACE(point);
    fs::remove_all(root);
    fs::create_directories(root);
    const auto v1 = batchDecl("v1");
    Result crashed = mesh({"apply", v1}, {{"MESH_HOST_CRASH_AT", point}});
    ASSERT_EQ(crashed.code, 86) << crashed.out << crashed.err;
    for (int i = 0; i < kFiles; ++i) {
      const std::string path = at(fmt::format("/srv/d{}/f{}", i % 3, i));
      if (fs::exists(path)) {
        EXPECT_EQ(read(fmt::format("/srv/d{}/f{}", i % 3, i)), fmt::format("v1 {}", i));
      }
    }
    Result r = apply(v1);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(holding("v1", "(none)"), kFiles);
    EXPECT_TRUE(leftovers().empty()) << leftovers().front();
  }
}

TEST_F(Leftover, TheNameOfALeftoverDoesNotDependOnTheNameLength) {
  // NAME_MAX names work: the temp name is not "the name plus a suffix".
  const std::string name(255, 'n');
  const auto d =
      declare(fmt::format("[module.m.file.long]\npath = \"/etc/{}\"\ncontent = \"a\"\n"
                          "[module.m.link.long2]\npath = \"/etc/l/{}\"\ntarget = \"x\"\n",
                          name, name));
  Result r = apply(d);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(read("/etc/" + name), "a");
  Result again = apply(d);
  EXPECT_EQ(again.json()["summary"]["unchanged"], 2) << again.out;
}

// A real kill (SIGKILL from strace) at the Nth fsync (and, apart, the Nth
// fdatasync, syncfs, rename and unlink of each kind — a batch of files fsyncs each
// temp file from a few threads, which strace -f follows: it counts each syscall on its
// own) of an apply, for every N
// until the apply runs through: afterwards, one more apply leaves no temp file
// anywhere and the credential holds one whole secret, the old or the new.
TEST_F(Leftover, AKillAtEveryFsyncLeavesNothingBehindAfterTheNextCycle) {
  if (runCommand({"strace", "-V"}).code != 0) GTEST_SKIP() << "strace is not installed";
  const auto d = decl();
  ASSERT_EQ(apply(d).code, 0);
  int killedWithLeftover = 0;  // kills that hit the window this test is about
  int round = 0;
  for (const std::string syscall :
       {"fsync", "fdatasync", "syncfs", "rename", "renameat", "renameat2", "unlink", "unlinkat"}) {
    bool ranThrough = false;
    for (int n = 1; n <= 40 && !ranThrough; ++n) {
      const std::string before = read("/etc/m/key"), wanted = fmt::format("secret-{}", ++round);
      setSecret(wanted);
      Result killed =
          runCommand({"strace", "-f", "-qq", "-o", "/dev/null", "-e",
                      fmt::format("inject={}:signal=KILL:when={}", syscall, n), MESH_HOST_BIN,
                      "apply", d, "--root", root, "--blobs", blobs, "--node", "test"});
      ranThrough = killed.code == 0;
      if (!ranThrough && !leftovers().empty()) ++killedWithLeftover;
      const std::string held = read("/etc/m/key");
      EXPECT_TRUE(held == wanted || held == before) << syscall << " " << n << ": " << held;
      Result next = apply(d);
      ASSERT_EQ(next.code, 0) << syscall << " " << n << ": " << next.out << next.err;
      EXPECT_TRUE(leftovers().empty()) << syscall << " " << n << ": " << leftovers().front();
      EXPECT_EQ(read("/etc/m/key"), wanted);
    }
    EXPECT_TRUE(ranThrough) << "no apply ran through within 40 calls of " << syscall;
  }
  EXPECT_GE(killedWithLeftover, 1) << "no kill landed between a temp file and its rename";
}

}  // namespace
}  // namespace mesh::e2e
