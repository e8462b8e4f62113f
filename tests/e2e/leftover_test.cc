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
// fdatasync: strace counts each syscall on its own) of an apply, for every N
// until the apply runs through: afterwards, one more apply leaves no temp file
// anywhere and the credential holds one whole secret, the old or the new.
TEST_F(Leftover, AKillAtEveryFsyncLeavesNothingBehindAfterTheNextCycle) {
  if (runCommand({"strace", "-V"}).code != 0) GTEST_SKIP() << "strace is not installed";
  const auto d = decl();
  ASSERT_EQ(apply(d).code, 0);
  int killedWithLeftover = 0;  // kills that hit the window this test is about
  int round = 0;
  for (const std::string syscall : {"fsync", "fdatasync"}) {
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
