// The CLI's text output against golden files (tests/golden/, tests/support/golden.hh):
// apply (created, updated and unchanged lines, the summary; -v), plan with a content
// diff and a redacted secret, status (and -v), history. Only times and durations are
// normalised, and the digests that depend on this node's random key (a credential's).
// MESH_GOLDEN_ACCEPT=1 ctest -R Golden rewrites the files.
#include <filesystem>
#include <fstream>
#include <regex>

#include "../support/golden.hh"
#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace test = ::mesh::test;

class Golden : public Node {
 protected:
  // A file, a directory, a link and a credential from a local file, all of module web.
  std::string declaration(const std::string& listen, const std::string& extra = "") {
    return declare(
        "[module.web.file.config]\npath = \"/etc/web/config.toml\"\n"
        "content = \"# web\\nlisten = \\\"" +
        listen +
        "\\\"\\nworkers = 4\\n\"\n\n"
        "[module.web.directory.data]\npath = \"/srv/web\"\nmode = \"0750\"\n\n"
        "[module.web.link.current]\npath = \"/srv/current\"\ntarget = \"/srv/web\"\n\n"
        "[module.web.credential.key]\npath = \"/etc/web/key\"\nfrom = \"secret\"\n" +
        extra);
  }
  void secret(const std::string& bytes) {
    std::ofstream(work + "/secret", std::ios::binary | std::ios::trunc) << bytes;
  }
  // A credential's digest is keyed with this node's key, made anew in every run.
  static std::vector<test::Replace> keyedDigests() {
    return {test::Replace(std::regex(R"((web\.key\b.*)sha256:[0-9a-f]{12})"), "$1sha256:<keyed>")};
  }
  // Applies the first declaration, then drifts config (edited) and the link.
  void appliedAndDrifted() {
    secret("hunter2-first\n");
    ASSERT_EQ(apply(declaration("127.0.0.1:7070"), false).code, 0);
    write("/etc/web/config.toml", "# edited by hand\n");
    std::filesystem::remove(at("/srv/current"));
    std::filesystem::create_symlink("/srv/old", at("/srv/current"));
  }
};

TEST_F(Golden, ApplyCreated) {
  secret("hunter2-first\n");
  const Result r = apply(declaration("127.0.0.1:7070"), false);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(test::matchesGolden("apply_created", r.out));
}

TEST_F(Golden, ApplyVerboseAfterDrift) {
  appliedAndDrifted();
  const Result r = mesh({"apply", "-v", declaration("127.0.0.1:7070")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(test::matchesGolden("apply_verbose_drift", r.out));
}

TEST_F(Golden, PlanShowsTheContentDiffAndRedactsTheSecret) {
  secret("hunter2-first\n");
  ASSERT_EQ(apply(declaration("127.0.0.1:7070"), false).code, 0);
  secret("hunter2-second\n");
  const Result r = plan(declaration("0.0.0.0:8080"));
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(test::matchesGolden("plan_diff", r.out));
  EXPECT_EQ(r.out.find("hunter2"), std::string::npos) << r.out;
}

TEST_F(Golden, Status) {
  appliedAndDrifted();
  ASSERT_EQ(apply(declaration("127.0.0.1:7070"), false).code, 0);
  const Result r = mesh({"status"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(test::matchesGolden("status", r.out));
  const Result v = mesh({"status", "-v"});
  EXPECT_EQ(v.code, 0) << v.err;
  EXPECT_TRUE(test::matchesGolden("status_verbose", v.out, keyedDigests()));
}

// A file declared beneath another file fails; the rest stays unchanged.
TEST_F(Golden, ApplyAndStatusOfAFailingResource) {
  secret("hunter2-first\n");
  ASSERT_EQ(apply(declaration("127.0.0.1:7070"), false).code, 0);
  const std::string blocked =
      "\n[module.web.file.blocked]\npath = \"/etc/web/config.toml/x\"\ncontent = \"x\"\n";
  const Result r = apply(declaration("127.0.0.1:7070", blocked), false);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(test::matchesGolden("apply_failed", r.out));
  const Result s = mesh({"status"});
  EXPECT_EQ(s.code, 1) << s.err;
  EXPECT_TRUE(test::matchesGolden("status_failing", s.out));
}

TEST_F(Golden, History) {
  appliedAndDrifted();
  ASSERT_EQ(apply(declaration("127.0.0.1:7070"), false).code, 0);
  secret("hunter2-second\n");
  ASSERT_EQ(apply(declaration("0.0.0.0:8080"), false).code, 0);
  const Result r = mesh({"history"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(test::matchesGolden("history", r.out, keyedDigests()));
}

}  // namespace
}  // namespace mesh::e2e
