// Churn: a resource changed again and again while its declaration did not ask
// for it is shown by `status` (exit 1), with how often and why; a declaration
// that really changes every cycle is not churn.
#include "process_fixture.hh"

namespace mesh::e2e {
namespace {

class Churn : public Node {
 protected:
  std::string fileDecl(const std::string& content) {
    return declare(
        fmt::format("[module.m.file.x]\npath = \"/etc/x\"\ncontent = \"{}\"\n", content));
  }

  nlohmann::json resource(const nlohmann::json& status, const std::string& id) {
    for (const auto& r : status["resources"])
      if (r["id"] == id) return r;
    ADD_FAILURE() << "no " << id << " in " << status.dump();
    return {};
  }
};

TEST_F(Churn, OutsideWriterBeforeEveryCycleIsChurning) {
  const auto decl = fileDecl("one");
  ASSERT_EQ(apply(decl).code, 0);
  EXPECT_EQ(mesh({"status"}).code, 0);
  for (int i = 0; i < 3; ++i) {
    write("/etc/x", "edited behind our back " + std::to_string(i) + "\n");
    Result r = apply(decl);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(outcomeOf(r.json(), "m.x")["reason"], "drift: content changed");
  }
  Result st = mesh({"status"});
  EXPECT_EQ(st.code, 1) << st.out << st.err;
  EXPECT_NE(st.out.find("churning m.x (m): changed 3 times in the last 10 cycles "
                        "(drift: content changed ×3)"),
            std::string::npos)
      << st.out;
  EXPECT_NE(st.out.find("0 failing, 1 churning"), std::string::npos) << st.out;

  Result js = mesh({"status", "--json"});
  EXPECT_EQ(js.code, 1);
  const auto x = resource(js.json(), "m.x");
  EXPECT_EQ(x["churning"], true) << x.dump();
  EXPECT_EQ(x["changes"], 4) << x.dump();  // ever: created, then repaired 3 times
  EXPECT_EQ(x["churn"]["changes"], 3) << x.dump();
  EXPECT_EQ(x["churn"]["reasons"]["drift: content changed"], 3) << x.dump();
  for (const char* key : {"id", "module", "kind", "outcome", "wrote", "applied_at", "changed_at",
                          "changes", "churning", "service"})
    EXPECT_TRUE(x.contains(key)) << key;
}

TEST_F(Churn, ThresholdAndWindowOptions) {
  const auto decl = fileDecl("one");
  ASSERT_EQ(apply(decl).code, 0);
  for (int i = 0; i < 2; ++i) {
    write("/etc/x", "edit " + std::to_string(i) + "\n");
    ASSERT_EQ(apply(decl).code, 0);
  }
  for (int i = 0; i < 3; ++i) ASSERT_EQ(apply(decl).code, 0);  // quiet cycles
  EXPECT_EQ(mesh({"status"}).code, 1);
  EXPECT_EQ(mesh({"status", "--churn-threshold", "3"}).code, 0);
  EXPECT_EQ(mesh({"status", "--churn-window", "3"}).code, 0);  // the edits are 4-5 cycles old
  EXPECT_EQ(mesh({"status", "--churn-window", "5"}).code, 1);
}

TEST_F(Churn, DeclarationChangeEveryCycleIsNotChurning) {
  for (int i = 0; i < 5; ++i) {
    Result r = apply(fileDecl("version " + std::to_string(i)));
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(outcomeOf(r.json(), "m.x")["outcome"], i == 0 ? "created" : "updated");
  }
  Result st = mesh({"status", "--json"});
  EXPECT_EQ(st.code, 0) << st.out << st.err;
  const auto x = resource(st.json(), "m.x");
  EXPECT_EQ(x["churning"], false) << x.dump();
  EXPECT_EQ(x["churn"]["changes"], 0) << x.dump();
  EXPECT_EQ(x["changes"], 5) << x.dump();
}

// The seed's case: a process re-created every other cycle (a test-only fault
// seam in the process applier) must show as churning at a glance.
class ProcessChurn : public ProcessNode {};

TEST_P(ProcessChurn, RecreatedEveryOtherCycleIsChurning) {
  const auto decl = declare(text());
  const std::map<std::string, std::string> fault = {
      {"MESH_HOST_FAULT", "recreate-every-other-cycle"}};
  std::vector<int> pids;
  for (int cycle = 1; cycle <= 4; ++cycle) {
    Result r = mesh({"apply", decl, "--json"}, fault);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto o = outcomeOf(r.json(), id());
    if (cycle == 1) {
      EXPECT_EQ(o["outcome"], "created") << o.dump();
    }
    if (cycle == 2 || cycle == 4) {
      EXPECT_EQ(o["outcome"], "updated") << o.dump();
      EXPECT_EQ(o["restarted"], true) << o.dump();
      EXPECT_EQ(o["reason"], "drift: unit edited (fault injected)") << o.dump();
    }
    if (cycle == 3) {
      EXPECT_EQ(o["outcome"], "unchanged") << o.dump();
    }
    pids.push_back(serviceStatus()["pid"].get<int>());
  }
  EXPECT_NE(pids[1], pids[0]);
  EXPECT_EQ(pids[2], pids[1]);
  EXPECT_NE(pids[3], pids[2]);

  Result st = mesh({"status"});
  EXPECT_EQ(st.code, 1) << st.out << st.err;
  EXPECT_NE(st.out.find(fmt::format("churning {} ({}): changed 2 times in the last 10 cycles "
                                    "(drift: unit edited (fault injected) ×2)",
                                    id(), module)),
            std::string::npos)
      << st.out;
}

TEST_P(ProcessChurn, SeamIsInertWithoutTheVariable) {
  const auto decl = declare(text());
  ASSERT_EQ(apply(decl).code, 0);
  const int pid = serviceStatus()["pid"].get<int>();
  for (int cycle = 2; cycle <= 4; ++cycle) {
    Result r = apply(decl);
    EXPECT_EQ(outcomeOf(r.json(), id())["outcome"], "unchanged") << r.out;
  }
  EXPECT_EQ(serviceStatus()["pid"].get<int>(), pid);
  EXPECT_EQ(mesh({"status"}).code, 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, ProcessChurn, ::testing::Values("builtin", "systemd"));

}  // namespace
}  // namespace mesh::e2e
