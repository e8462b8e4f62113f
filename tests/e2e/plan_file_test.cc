// A reviewed plan is the applied plan: `plan DECL --out PLAN` records what it would do,
// `apply --plan PLAN` does exactly that, or refuses with exit 4 and does nothing when the
// declaration, the node or the machine moved since.
#include <sys/stat.h>

#include <fstream>

#include "every_kind.hh"

namespace mesh::e2e {
namespace {

class PlanFile : public EveryKind {
 protected:
  std::string planPath() const { return work + "/reviewed.plan"; }
  Result planTo(const std::string& decl) {
    Result r = mesh({"plan", decl, "--out", planPath()});
    EXPECT_TRUE(r.code == 0 || r.code == 3) << r.out << r.err;
    return r;
  }
  Result applyPlan(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"apply", "--plan", planPath()};
    args.insert(args.end(), extra.begin(), extra.end());
    return mesh(args);
  }
};

TEST_F(PlanFile, AppliesExactlyWhatWasPlanned) {
  Result planned = planTo(declPath);
  struct stat st {};
  ASSERT_EQ(::stat(planPath().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the plan names the declaration's text: root's eyes only";
  std::ifstream in(planPath());
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(file.find(kSecret), std::string::npos) << "a credential's value never reaches it";

  Result applied = applyPlan({"--json"});
  ASSERT_EQ(applied.code, 0) << applied.out << applied.err;
  const auto j = applied.json();
  EXPECT_EQ(j["summary"]["created"], 5) << applied.out;
  EXPECT_EQ(read("/etc/m/config"), "listen = 1\n");

  // A plan of a converged node applies as a no-op.
  planTo(declPath);
  Result again = applyPlan({"--json"});
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_EQ(again.json()["summary"]["unchanged"], 5) << again.out;
}

TEST_F(PlanFile, RefusesWhenTheMachineMovedAndAppliesNothing) {
  ASSERT_EQ(apply(declPath).code, 0);
  const auto changed = declare(text("listen = 2\n"), "changed.toml");
  planTo(changed);                          // would update m.config only
  write("/etc/m/key", "edited by hand\n");  // m.key drifts after the review
  Result r = applyPlan();
  EXPECT_EQ(r.code, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("m.key: planned unchanged, now updated"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was applied"), std::string::npos) << r.err;
  EXPECT_EQ(read("/etc/m/config"), "listen = 1\n") << "the planned update was not made either";
  EXPECT_EQ(read("/etc/m/key"), "edited by hand\n");
}

TEST_F(PlanFile, RefusesADeclarationChangedSinceTheReview) {
  ASSERT_EQ(apply(declPath).code, 0);
  const auto changed = declare(text("listen = 2\n"), "changed.toml");
  planTo(changed);
  declare(text("listen = 3\n"), "changed.toml");  // edited after the review
  Result r = applyPlan({"--json"});
  EXPECT_EQ(r.code, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("changed since the plan"), std::string::npos) << r.err;
  EXPECT_EQ(r.json()["applied"], false) << r.out;
  EXPECT_EQ(r.json()["schema"], 1) << r.out;
  EXPECT_EQ(read("/etc/m/config"), "listen = 1\n");
}

TEST_F(PlanFile, RefusesAnotherNodesPlan) {
  planTo(declPath);
  Result r = runCommand({MESH_HOST_BIN, "apply", "--plan", planPath(), "--root", root, "--blobs",
                         blobs, "--node", "elsewhere"});
  EXPECT_EQ(r.code, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("made for node test; this is node elsewhere"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(at("/etc/m/config")));
}

// Bad input: exit 2, nothing applied.
TEST_F(PlanFile, SaysWhatIsWrongWithABadPlanOrCommandLine) {
  std::ofstream(planPath()) << "{\"type\": \"something else\"}";
  Result foreign = applyPlan();
  EXPECT_EQ(foreign.code, 2) << foreign.err;
  EXPECT_NE(foreign.err.find("not a plan file of this mesh-host"), std::string::npos)
      << foreign.err;
  std::ofstream(planPath()) << "not json";
  EXPECT_EQ(applyPlan().code, 2);
  planTo(declPath);
  std::string text;
  {
    std::ifstream in(planPath());
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  text.replace(text.find("listen = 1"), 10, "listen = 9");  // the declaration, not its digest
  std::ofstream(planPath()) << text;
  Result tampered = applyPlan();
  EXPECT_EQ(tampered.code, 2) << tampered.err;
  EXPECT_NE(tampered.err.find("does not have its digest"), std::string::npos) << tampered.err;
  EXPECT_EQ(mesh({"apply", declPath, "--plan", planPath()}).code, 2);
  EXPECT_EQ(mesh({"apply"}).code, 2);
  EXPECT_EQ(mesh({"apply", "--plan", planPath(), "--detailed-exitcode"}).code, 1)
      << "with --detailed-exitcode bad input is 1";
  EXPECT_FALSE(std::filesystem::exists(at("/etc/m/config")));
}

}  // namespace
}  // namespace mesh::e2e
