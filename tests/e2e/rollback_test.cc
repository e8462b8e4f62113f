// Generations and rollback: every distinct declaration applied is numbered;
// rolling back restores its files and processes, restarting only what differs.
#include <filesystem>
#include <fstream>

#include "process_fixture.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

class Rollback : public ProcessNode {
 protected:
  // The fixture's node (config, key, a process restarted on them), plus a
  // second process that restarts on nothing, and optionally an extra file.
  std::string generation(const std::string& config, bool extraFile) const {
    std::string t = text(config);
    t += fmt::format(R"(
[module.{0}.process.steady]
bundle = "{1}"
service = "{0}-steady.service"
unit = {{ ExecStart = "{{bundle}}/bin/svc", Environment = ["MESH_CONFIG=/dev/null"] }}
)",
                     module, bundle);
    if (extraFile)
      t += fmt::format("\n[module.{0}.file.extra]\npath = \"/etc/{0}/extra\"\ncontent = \"x\"\n",
                       module);
    return t;
  }

  int pidOf(const std::string& resourceId) {
    const auto j = mesh({"status", "--json"}).json();
    for (const auto& r : j["resources"])
      if (r["id"] == resourceId) return r["service"]["pid"].get<int>();
    ADD_FAILURE() << "no " << resourceId;
    return 0;
  }
  std::string steady() const { return module + ".steady"; }
};

TEST_P(Rollback, RestoresFilesAndProcessesRestartingOnlyWhatDiffers) {
  ASSERT_EQ(apply(declare(generation("one", false), "g1.toml")).code, 0);
  ASSERT_EQ(apply(declare(generation("two", true), "g2.toml")).code, 0);
  ASSERT_EQ(read("/etc/" + module + "/config"), "two");
  ASSERT_TRUE(fs::exists(at("/etc/" + module + "/extra")));
  const int runtimePid = pidOf(id()), steadyPid = pidOf(steady());

  Result gens = mesh({"generations", "--json"});
  ASSERT_EQ(gens.code, 0) << gens.err;
  auto g = gens.json();
  ASSERT_EQ(g["generations"].size(), 2u) << gens.out;
  EXPECT_EQ(g["current"], 2);
  EXPECT_EQ(g["generations"][1]["current"], true);
  EXPECT_EQ(g["generations"][0]["current"], false);
  EXPECT_TRUE(g["generations"][0]["source"].get<std::string>().ends_with("g1.toml"));
  EXPECT_NE(mesh({"generations"}).out.find("(current)"), std::string::npos);

  Result back = mesh({"rollback"});  // default: the one before the current
  ASSERT_EQ(back.code, 0) << back.out << back.err;
  EXPECT_NE(back.out.find("rollback: applying generation 1 (current: 2)"), std::string::npos)
      << back.out;
  EXPECT_NE(back.out.find("updated " + module + ".config"), std::string::npos) << back.out;
  EXPECT_NE(back.out.find("removed " + module + ".extra"), std::string::npos) << back.out;
  EXPECT_NE(back.out.find("restart-on " + module + ".config"), std::string::npos) << back.out;
  EXPECT_EQ(back.out.find(steady()), std::string::npos) << "steady is unchanged: " << back.out;
  EXPECT_EQ(read("/etc/" + module + "/config"), "one");
  EXPECT_FALSE(fs::exists(at("/etc/" + module + "/extra")));
  EXPECT_NE(pidOf(id()), runtimePid);
  EXPECT_EQ(pidOf(steady()), steadyPid) << "a process whose unit did not change was restarted";
  EXPECT_EQ(mesh({"generations", "--json"}).json()["current"], 1);

  // Forward again by number, as JSON: the same report apply prints.
  Result fwd = mesh({"rollback", "2", "--json"});
  ASSERT_EQ(fwd.code, 0) << fwd.out << fwd.err;
  EXPECT_EQ(outcomeOf(fwd.json(), module + ".extra")["outcome"], "created");
  EXPECT_EQ(outcomeOf(fwd.json(), steady())["outcome"], "unchanged");
  EXPECT_EQ(read("/etc/" + module + "/config"), "two");
  EXPECT_EQ(pidOf(steady()), steadyPid);
  EXPECT_EQ(mesh({"generations", "--json"}).json()["generations"].size(), 2u);
}

TEST_P(Rollback, UnknownGenerationIsBadInput) {
  ASSERT_EQ(apply(declare(generation("one", false))).code, 0);
  Result r = mesh({"rollback", "7"});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("there is no generation 7"), std::string::npos) << r.err;
  Result first = mesh({"rollback"});
  EXPECT_EQ(first.code, 2) << first.out << first.err;
  EXPECT_NE(first.err.find("none before it"), std::string::npos) << first.err;
}

// A relative credential `from` resolves where the original declaration lived,
// wherever rollback runs.
TEST_P(Rollback, ResolvesRelativePathsLikeTheOriginalApply) {
  fs::create_directories(work + "/decls/secrets");
  std::ofstream(work + "/decls/secrets/k") << "relative-secret";
  const std::string rel = fmt::format(
      "[module.{0}.credential.rel]\npath = \"/etc/{0}/rel\"\nfrom = \"secrets/k\"\n", module);
  ASSERT_EQ(apply(declare(rel, "decls/g1.toml")).code, 0);
  ASSERT_EQ(apply(declare("node = \"test\"\nempty = true\n", "decls/g2.toml")).code, 0);
  ASSERT_FALSE(fs::exists(at("/etc/" + module + "/rel")));
  Result r = mesh({"rollback", "1"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(read("/etc/" + module + "/rel"), "relative-secret");
}

INSTANTIATE_TEST_SUITE_P(Backends, Rollback, ::testing::Values("builtin", "systemd"));

}  // namespace
}  // namespace mesh::e2e
