// End-to-end harness: runs the real mesh-host binary against a temp root.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../support/files.hh"

namespace mesh::e2e {

// A file's bytes, for every e2e test (tests/support/files.hh).
using ::mesh::test::slurp;

struct Result {
  int code = -1;
  std::string out, err;
  nlohmann::json json() const;  // stdout as JSON; fails the test when it is not
};

// Runs a command line; returns its exit code and output.
Result runCommand(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env = {});

// Identity and content of one path, to prove nothing was written.
struct PathSnapshot {
  ino_t ino = 0;
  int64_t mtimeNs = 0;
  int64_t ctimeNs = 0;
  mode_t mode = 0;
  std::string content;  // files: bytes; links: target
  bool operator==(const PathSnapshot&) const = default;
};
void PrintTo(const PathSnapshot& s, std::ostream* os);
// Every path under `dir` (recursively, links not followed), skipping `skip` subtrees.
std::map<std::string, PathSnapshot> snapshotTree(const std::string& dir,
                                                 const std::vector<std::string>& skip = {});

class Node : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // mesh-host <args…> --root <root> --blobs <blobs> --node test
  Result mesh(std::vector<std::string> args, const std::map<std::string, std::string>& env = {});
  Result apply(const std::string& decl, bool json = true);
  Result plan(const std::string& decl, bool json = false);
  // The agent on this node: mesh-host run --declaration <decl> --interval <interval>
  // --splay 0 --root <root> --blobs <blobs> --node test --log-format json <extraArgs…>,
  // for an AgentProcess to start.
  std::vector<std::string> agentArgv(const std::string& decl, const std::string& interval) const;

  // Writes a declaration file (outside the root) and returns its path.
  std::string declare(const std::string& text, const std::string& name = "decl.toml");
  // Copies a file into the blob store; returns "sha256:…".
  std::string publish(const std::string& file);
  // Makes a tar (or other) archive with the real tool: `cmd` runs in a fresh dir
  // holding `files`, and must write ./out; returns its path.
  std::string makeArchive(const std::map<std::string, std::string>& files, const std::string& cmd);

  std::string at(const std::string& declared) const { return root + declared; }
  std::string read(const std::string& declared) const;
  void write(const std::string& declared, const std::string& content) const;
  std::string stateDir() const { return root + "/var/lib/mesh-host"; }

  // outcome of one id in a JSON report
  static nlohmann::json outcomeOf(const nlohmann::json& report, const std::string& id);

  // Added to every mesh() call (e.g. the supervisor backend) and its environment.
  std::vector<std::string> extraArgs;
  std::map<std::string, std::string> extraEnv;

  std::string work;   // temp dir holding everything
  std::string root;   // the node's root
  std::string blobs;  // blob store
};

}  // namespace mesh::e2e
