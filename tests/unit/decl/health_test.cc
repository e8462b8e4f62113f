// A process's `health = { exec, interval, timeout }` (decl/health_field.hh): read into
// the model, kept by the compiled form, and every bad value refused at its place.
#include <gtest/gtest.h>

#include "decl/compiled.hh"
#include "decl_test.hh"

namespace mesh::decl::test {
namespace {

std::string process(const std::string& health) {
  return "[module.web.process.app]\nbundle = \"" + kDigestA +
         "\"\nunit = { ExecStart = \"{bundle}/bin/app\" }\n" + health;
}

const ProcessSpec& spec(const Declaration& d) {
  return std::get<ProcessSpec>(d.resources.at(0).spec);
}

TEST(Health, IsReadWithItsTimes) {
  const auto d =
      parse(process("health = { exec = \"{bundle}/bin/check --port 80\", interval = \"5s\", "
                    "timeout = \"2s\" }\n"));
  ASSERT_TRUE(spec(d).health);
  EXPECT_EQ(spec(d).health->exec, "{bundle}/bin/check --port 80");
  EXPECT_EQ(spec(d).health->intervalMs, 5000);
  EXPECT_EQ(spec(d).health->timeoutMs, 2000);
}

TEST(Health, DefaultsAreTenAndFiveSecondsAndTheTimeoutNeverPassesTheInterval) {
  auto d = parse(process("health = { exec = \"/bin/true\" }\n"));
  ASSERT_TRUE(spec(d).health);
  EXPECT_EQ(spec(d).health->intervalMs, 10000);
  EXPECT_EQ(spec(d).health->timeoutMs, 5000);
  d = parse(process("health = { exec = \"/bin/true\", interval = \"2s\" }\n"));
  EXPECT_EQ(spec(d).health->timeoutMs, 2000);
}

TEST(Health, NoneDeclaredIsNone) {
  EXPECT_FALSE(spec(parse(process(""))).health);
}

TEST(Health, SubstitutesTheNodeName) {
  const auto d = parse(process("health = { exec = \"/bin/check {node}\" }\n"));
  EXPECT_EQ(spec(d).health->exec, "/bin/check laptop");
}

TEST(Health, TheCompiledFormKeepsIt) {
  for (const std::string h :
       {"", "health = { exec = \"/bin/check\", interval = \"3s\", timeout = \"500ms\" }\n"}) {
    const auto d = parse(process(h));
    const std::string form = compileDeclaration(d);
    auto back = loadCompiled(form, d.digest, defaultOptions());
    ASSERT_TRUE(back) << h;
    EXPECT_EQ(spec(*back).health, spec(d).health) << h;
    EXPECT_EQ(compileDeclaration(*back), form);
  }
}

TEST(Health, BadValuesAreRefusedEachWithWhatToDo) {
  const struct {
    std::string health, expect;
  } cases[] = {
      {"health = { exec = \"\" }", "'exec' in process web.app's health is empty"},
      {"health = { exec = \"   \" }", "is empty"},
      {"health = { interval = \"5s\" }", "exec"},
      {"health = { exec = \"/bin/true\", interval = \"0\" }", "a check runs at most once a second"},
      {"health = { exec = \"/bin/true\", interval = \"500ms\" }", "use \"1s\" or more"},
      {"health = { exec = \"/bin/true\", timeout = \"0s\" }",
       "timeout in process web.app's health is 0"},
      {"health = { exec = \"/bin/true\", interval = \"2s\", timeout = \"3s\" }",
       "is longer than its interval"},
      {"health = { exec = \"/bin/true\", interval = \"soon\" }", "interval 'soon'"},
      {"health = { exec = \"/bin/true\", interval = \"infinity\" }", "is not a time span"},
      {"health = { exec = \"/bin/true\", retries = 3 }", "retries"},
      {"health = \"/bin/true\"", "a table, e.g. health = { exec"},
      {"health = { exec = 7 }", "exec"},
  };
  for (const auto& c : cases) {
    const std::string e = errorOf(process(c.health + "\n"));
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.health << "\n→ " << e;
    EXPECT_NE(e.find("decl.toml:"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace mesh::decl::test
