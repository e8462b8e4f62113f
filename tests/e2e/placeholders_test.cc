// Issue 31: {node} and {cluster} in a declaration, end to end: plan shows the substituted
// path, content and link target (its diff too), apply writes exactly that, and a
// declaration that names {cluster} where none is known is refused as bad input.
#include <filesystem>

#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

class Placeholders : public Node {
 protected:
  static std::string text(const std::string& extra) {
    return "cluster = \"lab\"\n"
           "[module.m.file.conf]\n"
           "path = \"/etc/{cluster}/{node}.conf\"\n"
           "content = \"node = {node}\\ncluster = {cluster}\\n" +
           extra +
           "\"\n"
           "[module.m.link.current]\n"
           "path = \"/etc/current-{node}\"\n"
           "target = \"/etc/{cluster}/{node}.conf\"\n";
  }
};

TEST_F(Placeholders, PlanAndApplyShowAndWriteTheSubstitutedText) {
  const auto decl = declare(text(""));
  Result p = plan(decl);
  EXPECT_EQ(p.code, 3) << p.out << p.err;
  EXPECT_NE(p.out.find("/etc/lab/test.conf"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("+node = test\n+cluster = lab\n"), std::string::npos) << p.out;
  EXPECT_EQ(p.out.find("{node}"), std::string::npos) << p.out;
  EXPECT_EQ(p.out.find("{cluster}"), std::string::npos) << p.out;

  Result a = apply(decl, /*json=*/false);
  ASSERT_EQ(a.code, 0) << a.out << a.err;
  EXPECT_EQ(read("/etc/lab/test.conf"), "node = test\ncluster = lab\n");
  EXPECT_EQ(fs::read_symlink(at("/etc/current-test")), "/etc/lab/test.conf");
  EXPECT_EQ(a.out.find("{node}"), std::string::npos) << a.out;

  // A change shows as its substituted diff.
  const auto changed = declare(text("more = {node}\\n"), "changed.toml");
  Result d = plan(changed);
  EXPECT_EQ(d.code, 3) << d.out;
  EXPECT_NE(d.out.find("--- a/etc/lab/test.conf"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("+more = test\n"), std::string::npos) << d.out;
  ASSERT_EQ(apply(changed).code, 0);
  EXPECT_EQ(read("/etc/lab/test.conf"), "node = test\ncluster = lab\nmore = test\n");
  Result again = apply(changed);
  EXPECT_EQ(outcomeOf(again.json(), "m.conf")["outcome"], "unchanged");
}

TEST_F(Placeholders, ClusterWhereNoneIsKnownIsBadInput) {
  const auto decl =
      declare("[module.m.file.conf]\npath = \"/etc/app.conf\"\ncontent = \"in {cluster}\\n\"\n");
  Result a = apply(decl, /*json=*/false);
  EXPECT_EQ(a.code, 2) << a.out << a.err;
  EXPECT_NE(a.err.find("decl.toml:3:"), std::string::npos) << a.err;
  EXPECT_NE(a.err.find("content in file m.conf uses {cluster} but no cluster is known"),
            std::string::npos)
      << a.err;
  EXPECT_FALSE(fs::exists(at("/etc/app.conf")));
}

}  // namespace
}  // namespace mesh::e2e
