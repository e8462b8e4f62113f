// A failure stays with its resource and what requires it; everything else converges.
#include <filesystem>

#include "harness.hh"

namespace mesh::e2e {
namespace {

class Failure : public Node {};

TEST_F(Failure, DependentsAreSkippedOthersConverge) {
  const std::string missing = "sha256:" + std::string(64, 'b');
  auto decl = declare(R"(
[module.m.archive.app]
path = "/opt/app"
bundle = ")" + missing +
                      R"("

[module.m.link.current]
path = "/opt/current"
target = "/opt/app"
requires = ["m.app"]

[module.m.file.unrelated]
path = "/etc/unrelated"
content = "converges\n"
)");
  Result r = apply(decl);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto j = r.json();
  auto app = outcomeOf(j, "m.app");
  EXPECT_EQ(app["outcome"], "failed");
  EXPECT_NE(app["reason"].get<std::string>().find("not found"), std::string::npos) << app.dump();
  auto link = outcomeOf(j, "m.current");
  EXPECT_EQ(link["outcome"], "skipped");
  EXPECT_EQ(link["reason"], "requires m.app, which failed");
  EXPECT_FALSE(std::filesystem::is_symlink(at("/opt/current")));
  EXPECT_EQ(outcomeOf(j, "m.unrelated")["outcome"], "created");
  EXPECT_EQ(read("/etc/unrelated"), "converges\n");

  // status shows what fails, and exits 1.
  Result st = mesh({"status"});
  EXPECT_EQ(st.code, 1) << st.out;
  EXPECT_NE(st.out.find("failed m.app (m)"), std::string::npos) << st.out;
}

TEST_F(Failure, AFailingResourceLeavesWhatWasThere) {
  std::filesystem::create_directories(at("/etc"));
  write("/etc/keep", "before\n");
  auto decl = declare(R"(
[module.m.file.keep]
path = "/etc/keep"
blob = "sha256:)" + std::string(64, 'c') +
                      R"("
)");
  Result r = apply(decl);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "m.keep")["outcome"], "failed");
  EXPECT_EQ(read("/etc/keep"), "before\n");
}

}  // namespace
}  // namespace mesh::e2e
