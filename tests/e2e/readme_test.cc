// The README's complete example, run as written: its shell block makes the bundle
// and the key, its declaration is applied, applied again (nothing changes) and
// retired. Only what a reader must change is changed: the path of
// make-bundle.sh, the digest it printed, and --root.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

// The fenced block right after `<!-- readme-example: <name> -->`.
std::string readmeBlock(const std::string& name) {
  std::ifstream in(std::string(MESH_SOURCE_DIR) + "/README.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const auto marker = text.find("<!-- readme-example: " + name + " -->");
  if (marker == std::string::npos) return {};
  const auto open = text.find("```", marker);
  const auto body = text.find('\n', open) + 1;
  const auto close = text.find("\n```", body);
  return text.substr(body, close - body + 1);
}

void replaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

class Readme : public Node {};

TEST_F(Readme, TheCompleteExampleApplies) {
  std::string shell = readmeBlock("shell");
  std::string declaration = readmeBlock("declaration");
  ASSERT_FALSE(shell.empty()) << "README.md lost its example's shell block";
  ASSERT_FALSE(declaration.empty()) << "README.md lost its example's declaration";
  replaceAll(shell, "/path/to/mesh-host/examples/make-bundle.sh",
             std::string(MESH_SOURCE_DIR) + "/examples/make-bundle.sh");
  const std::string dir = work + "/example";
  fs::create_directories(dir);
  Result made = runCommand({"bash", "-euo", "pipefail", "-c", "cd '" + dir + "'\n" + shell});
  ASSERT_EQ(made.code, 0) << made.out << made.err;
  const std::string digest = made.out.substr(made.out.rfind("sha256:"), 71);
  ASSERT_EQ(digest.size(), 71u) << made.out;
  ASSERT_NE(declaration.find("bundle = \"sha256:…\""), std::string::npos);
  replaceAll(declaration, "sha256:…", digest);
  std::ofstream(dir + "/web.toml") << declaration;
  std::ofstream(dir + "/none.toml") << "node = \"web-1\"\nempty = true\n";

  auto run = [&](const std::string& decl) {
    return runCommand({MESH_HOST_BIN, "apply", dir + "/" + decl, "--root", root, "--blobs",
                       dir + "/blobs", "--node", "web-1", "--supervisor", "builtin", "--json"});
  };
  Result first = run("web.toml");
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  EXPECT_EQ(first.json()["summary"]["created"], 5) << first.out;
  EXPECT_EQ(read("/opt/web/releases/1/bin/web").substr(0, 9), "#!/bin/sh");
  EXPECT_EQ(fs::read_symlink(at("/opt/web/current")), "/opt/web/releases/1");

  Result again = run("web.toml");
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_EQ(again.json()["summary"]["unchanged"], 5) << again.out;
  EXPECT_EQ(again.json()["summary"]["supervisor"]["restart"], 0) << again.out;

  Result retired = run("none.toml");
  ASSERT_EQ(retired.code, 0) << retired.out << retired.err;
  EXPECT_EQ(retired.json()["summary"]["removed"], 5) << retired.out;
  EXPECT_FALSE(fs::exists(at("/etc/web/tls.key")));
}

}  // namespace
}  // namespace mesh::e2e
