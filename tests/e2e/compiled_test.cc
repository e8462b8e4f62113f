// The compiled declaration kept in the state store (compiled_declaration): an
// apply of the same text reads it instead of parsing, and nothing about it may
// change what a cycle does — another text, another binary's row or a damaged one
// is ignored and the text parsed again.
#include "every_kind.hh"

namespace mesh::e2e {
namespace {

class CompiledDeclaration : public EveryKind {
 protected:
  std::string sql(const std::string& statement) {
    Result r = runCommand({"sqlite3", "-batch", stateDir() + "/state.db", statement});
    EXPECT_EQ(r.code, 0) << statement << ": " << r.err;
    return r.out;
  }
  std::string row() { return sql("SELECT key, hex(form) FROM compiled_declaration"); }

  // Applies and expects every resource unchanged, the config as first declared.
  void expectUnchanged(const std::string& why) {
    Result r = apply(declPath);
    ASSERT_EQ(r.code, 0) << why << ": " << r.out << r.err;
    EXPECT_EQ(r.json()["summary"]["unchanged"], 5) << why << ": " << r.out;
    EXPECT_EQ(read("/etc/m/config"), "listen = 1\n") << why;
  }
};

TEST_F(CompiledDeclaration, KeptByTheFirstApplyAndReadByTheNext) {
  ASSERT_EQ(apply(declPath).code, 0);
  const std::string kept = row();
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(sql("SELECT count(*) FROM compiled_declaration"), "1\n");
  auto before = snapshotTree(root, {"var"});
  expectUnchanged("second apply");
  EXPECT_EQ(row(), kept);  // read, not written again
  EXPECT_EQ(snapshotTree(root, {"var"}), before);
}

TEST_F(CompiledDeclaration, ANewTextIsParsedAppliedAndKeptInstead) {
  ASSERT_EQ(apply(declPath).code, 0);
  const std::string kept = row();
  declare(text("listen = 2\n"));
  Result r = apply(declPath);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "m.config")["outcome"], "updated") << r.out;
  EXPECT_EQ(read("/etc/m/config"), "listen = 2\n");
  EXPECT_NE(row(), kept);
  EXPECT_EQ(sql("SELECT count(*) FROM compiled_declaration"), "1\n");
}

// An apply that reads the compiled form frees the text only when its generation
// is recorded already; a text read compiled and not recorded (its row's digest
// is another's here) is recorded whole.
TEST_F(CompiledDeclaration, ATextReadCompiledIsRecordedWholeWhenItsGenerationIsNew) {
  ASSERT_EQ(apply(declPath).code, 0);
  expectUnchanged("read compiled, generation known");
  EXPECT_EQ(sql("SELECT count(*) FROM generations"), "1\n");
  sql("UPDATE generations SET digest = 'sha256:" + std::string(64, '0') + "'");
  const std::string kept = row();
  expectUnchanged("read compiled, generation new");
  EXPECT_EQ(row(), kept) << "the compiled form was read, not parsed again";
  EXPECT_EQ(sql("SELECT count(*) FROM generations"), "2\n");
  // The first row holds the text as parsed the first time.
  EXPECT_EQ(sql("SELECT a.text = b.text AND length(a.text) > 100 FROM generation_texts a, "
                "generation_texts b WHERE a.generation = 1 AND b.generation = 2"),
            "1\n");
}

// A row another mesh-host binary kept (its key covers its build): not this one's.
TEST_F(CompiledDeclaration, AnotherBinarysRowIsIgnored) {
  ASSERT_EQ(apply(declPath).code, 0);
  const std::string kept = row();
  // That binary's form says other content under its own key.
  declare(text("listen = 2\n"));
  ASSERT_EQ(apply(declPath).code, 0);
  sql("UPDATE compiled_declaration SET key = 'sha256:" + std::string(64, '0') + "'");
  declare(text());
  Result r = apply(declPath);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(read("/etc/m/config"), "listen = 1\n");
  EXPECT_EQ(row(), kept);
}

TEST_F(CompiledDeclaration, ADamagedRowIsParsedAgain) {
  ASSERT_EQ(apply(declPath).code, 0);
  const std::string kept = row();
  // Same length, other content: only the form's own checksum can tell.
  sql("UPDATE compiled_declaration SET form = CAST(replace(CAST(form AS TEXT), 'listen = 1', "
      "'listen = 3') AS BLOB)");
  ASSERT_NE(row(), kept);
  expectUnchanged("content changed in the row");
  EXPECT_EQ(row(), kept);  // parsed and kept afresh

  sql("UPDATE compiled_declaration SET form = substr(form, 1, length(form) / 2)");
  expectUnchanged("row cut in half");
  sql("UPDATE compiled_declaration SET form = randomblob(5000)");
  expectUnchanged("row of noise");
  sql("UPDATE compiled_declaration SET form = x''");
  expectUnchanged("empty row");
  sql("DROP TABLE compiled_declaration");
  expectUnchanged("table gone");  // recreated on the next read-write open
  EXPECT_EQ(row(), kept);
}

TEST_F(CompiledDeclaration, PlanReadsItWritesNothingAndAgreesWithApply) {
  ASSERT_EQ(apply(declPath).code, 0);
  declare(text("listen = 2\n"));
  const std::string kept = row();
  Result plan = mesh({"plan", declPath, "--json"});
  EXPECT_EQ(plan.code, 3) << plan.out << plan.err;
  EXPECT_EQ(outcomeOf(plan.json(), "m.config")["outcome"], "updated") << plan.out;
  EXPECT_EQ(row(), kept);  // a plan keeps nothing
  Result r = apply(declPath);
  EXPECT_EQ(outcomeOf(r.json(), "m.config")["outcome"], "updated") << r.out;
  Result again = mesh({"plan", declPath, "--json"});  // now from the compiled form
  EXPECT_EQ(again.code, 0) << again.out << again.err;
}

}  // namespace
}  // namespace mesh::e2e
