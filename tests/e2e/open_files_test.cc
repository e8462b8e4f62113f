// A declaration over more directories than the process may hold open at once.
// The limit on open files is often 1024 (systemd's default for a service, a login
// shell's) and mesh-host does not raise it: each of its caches of open
// directories and files takes a share of it (util/open_files.hh). Before, the
// cycle held up to 1,024 directories open, a first apply one per directory it
// made: 3,000 files in 3,000 directories failed 16 of a first apply and 1,989 of
// every no-op after with "Too many open files".
#include <unistd.h>

#include <filesystem>

#include "harness.hh"

namespace mesh::e2e {
namespace {

class OpenFiles : public Node {
 protected:
  static constexpr int kFiles = 3000;
  static std::string pathOf(int i) { return "/srv/many/d" + std::to_string(i) + "/f"; }
  void SetUp() override {
    Node::SetUp();
    std::string text;
    for (int i = 0; i < kFiles; ++i)
      text += "[module.m.file.f" + std::to_string(i) + "]\npath = \"" + pathOf(i) +
              "\"\ncontent = \"" + std::to_string(i) + "\\n\"\n\n";
    decl = declare(text);
  }
  // `mesh-host apply --json` under a limit of `limit` open files (soft and hard).
  Result applyUnder(int limit) {
    return runCommand({"prlimit", "--nofile=" + std::to_string(limit) + ":" + std::to_string(limit),
                       "--", MESH_HOST_BIN, "apply", decl, "--root", root, "--blobs", blobs,
                       "--node", "test", "--json"});
  }
  std::string decl;
};

TEST_F(OpenFiles, ThousandsOfDirectoriesConvergeWithinTheUsualLimit) {
  for (int limit : {1024, 256}) {
    SCOPED_TRACE(limit);
    std::filesystem::remove_all(at("/srv"));
    std::filesystem::remove_all(stateDir());
    Result first = applyUnder(limit);
    ASSERT_EQ(first.code, 0) << first.out.substr(0, 2000) << first.err;
    EXPECT_EQ(first.json()["summary"]["created"], kFiles);
    Result noop = applyUnder(limit);
    ASSERT_EQ(noop.code, 0) << noop.out.substr(0, 2000) << noop.err;
    EXPECT_EQ(noop.json()["summary"]["unchanged"], kFiles);
    write(pathOf(2500), "edited\n");
    Result drift = applyUnder(limit);
    ASSERT_EQ(drift.code, 0) << drift.out.substr(0, 2000) << drift.err;
    EXPECT_EQ(drift.json()["summary"]["updated"], 1);
    EXPECT_EQ(drift.json()["summary"]["unchanged"], kFiles - 1);
    EXPECT_EQ(read(pathOf(2500)), "2500\n");
  }
}

}  // namespace
}  // namespace mesh::e2e
