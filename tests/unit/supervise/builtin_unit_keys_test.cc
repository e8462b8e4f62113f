// The one unit-key table (util/unit_keys.hh) against its two readers: every key a
// declaration may give passes the declaration's check, and every [Service] key is
// either parsed by the builtin supervisor or listed as unsupported by it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "decl/unit_keys.hh"
#include "supervise/builtin/unit_config.hh"
#include "util/unit_keys.hh"

namespace mesh::supervise::builtin {
namespace {

using Words = std::vector<std::string>;

// Values each key takes: a valid one for free-form keys the builtin parses.
std::vector<std::string> sampleValues(std::string_view key, const UnitKey& row) {
  static const std::map<std::string_view, std::string> kParsed = {
      {"ExecStart", "/bin/a"},   {"ExecReload", "/bin/kill -HUP $MAINPID"},
      {"Environment", "A=1"},    {"EnvironmentFile", "-/etc/default/a"},
      {"WorkingDirectory", "/"}, {"User", "root"},
      {"Group", "root"},         {"X-LogMaxBytes", "4096"}};
  switch (row.value) {
    case UnitKeyValue::Boolean:
      return {"yes", "no"};
    case UnitKeyValue::TimeSpan:
      return {"5s", "1min 30s"};
    case UnitKeyValue::OneOf:
      return {row.choices.begin(), row.choices.end()};
    case UnitKeyValue::Bytes:
      return {"64", "4096"};
    case UnitKeyValue::Any:
      break;
  }
  const auto it = kParsed.find(key);
  return {it == kParsed.end() ? std::string("x") : it->second};
}

TEST(UnitKeyTable, EveryDeclarableKeyPassesTheDeclarationsCheck) {
  size_t declarable = 0;
  for (const auto& [key, row] : unitKeys()) {
    for (const auto& value : sampleValues(key, row)) {
      const auto problem = decl::unitKeyProblem(key, {value}, "process m.a");
      if (row.declarable) {
        EXPECT_EQ(problem, std::nullopt) << key << "=" << value;
      } else {
        ASSERT_TRUE(problem) << key;
        EXPECT_NE(problem->find("unknown unit key '" + std::string(key) + "'"), std::string::npos)
            << *problem;
      }
    }
    declarable += row.declarable;
  }
  EXPECT_GT(declarable, 200u);
}

TEST(UnitKeyTable, EveryServiceKeyIsParsedByBuiltinOrListedUnsupported) {
  size_t honoured = 0, refused = 0;
  for (const auto& [key, row] : unitKeys()) {
    if (row.section != UnitSection::Service) continue;
    for (const auto& value : sampleValues(key, row)) {
      std::string text = "[Service]\n";
      if (key != "ExecStart") text += "ExecStart=/bin/a\n";
      text += std::string(key) + "=" + value + "\n";
      const ServiceKeys keys = parseServiceSection(text);
      ASSERT_EQ(keys.at(std::string(key)), Words{value}) << text;
      const auto& only = row.builtinChoices;
      if (!row.builtinHonours) {
        EXPECT_EQ(unsupportedServiceKeys(keys), Words{std::string(key)}) << text;
        ++refused;
      } else if (!only.empty() && std::find(only.begin(), only.end(), value) == only.end()) {
        EXPECT_EQ(unsupportedServiceKeys(keys), Words{std::string(key) + "=" + value}) << text;
        ++refused;
      } else {
        EXPECT_EQ(unsupportedServiceKeys(keys), Words{}) << text;
        EXPECT_NO_THROW((void)parseServiceConfig(keys)) << text;
        ++honoured;
      }
    }
  }
  EXPECT_GT(honoured, 14u);
  EXPECT_GT(refused, 150u);
}

TEST(UnitKeyTable, UnitAndInstallKeysAreNotTheBuiltinSupervisorsConcern) {
  for (const auto& [key, row] : unitKeys()) {
    if (row.section == UnitSection::Service) continue;
    EXPECT_FALSE(row.builtinHonours) << key;
    const std::string section = row.section == UnitSection::Unit ? "[Unit]\n" : "[Install]\n";
    const auto keys =
        parseServiceSection(section + std::string(key) + "=" + sampleValues(key, row).front() +
                            "\n[Service]\nExecStart=/bin/a\n");
    EXPECT_EQ(unsupportedServiceKeys(keys), Words{}) << key;
  }
}

// X- keys are systemd's extension keys: systemd ignores them, and so does the built-in
// supervisor (no warning), but for its own X-LogMaxBytes, which it honours and the
// declaration checks (a number of bytes, at least 64).
TEST(UnitKeyTable, ExtensionKeysAreDeclarable) {
  EXPECT_EQ(decl::unitKeyProblem("X-LogMaxBytes", {"4096"}, "process m.a"), std::nullopt);
  EXPECT_EQ(decl::unitKeyProblem("X-Vendor-Tag", {"anything"}, "process m.a"), std::nullopt);
  const auto small = decl::unitKeyProblem("X-LogMaxBytes", {"12"}, "process m.a");
  ASSERT_TRUE(small);
  EXPECT_NE(small->find("is not a number of bytes (at least 64)"), std::string::npos) << *small;
  const ServiceKeys keys =
      parseServiceSection("[Service]\nExecStart=/bin/a\nX-Vendor-Tag=blue\nX-LogMaxBytes=4096\n");
  EXPECT_EQ(unsupportedServiceKeys(keys), Words{});
  EXPECT_EQ(parseServiceConfig(keys).logMaxBytes, 4096u);
}

}  // namespace
}  // namespace mesh::supervise::builtin
