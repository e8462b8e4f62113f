// Apply order: explicit requires/restart-on, implied parent directories,
// declaration order otherwise; and the cycles that make an order impossible.
// Two tables: declarations and the order they parse to, declarations with
// cycles and what their refusal must say.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "decl_test.hh"

namespace mesh::decl {
namespace {

using test::errorOf;
using test::ids;
using test::kDigestA;
using test::parse;
using Ids = std::vector<std::string>;

// A declaration that parses, and the order its resources come in.
struct Ordering {
  const char* name;  // the case's test: Order/Ordered.ByItsConstraints/<name>
  std::string text;
  Ids order;
};

void PrintTo(const Ordering& o, std::ostream* os) {
  *os << o.name;
}

std::vector<Ordering> orderings() {
  return {
      {.name = "TextualOrderWithoutConstraints",
       .text = R"(
[module.z.file.c]
path = "/c"
content = ""
[module.a.directory.b]
path = "/b"
[module.m.link.a]
path = "/a"
target = "/c"
)",
       .order = {"z.c", "a.b", "m.a"}},
      {.name = "RequiresComesFirst",
       .text = R"(
[module.m.file.app]
path = "/app"
content = ""
requires = ["m.user-conf", "n.base"]
[module.m.file.user-conf]
path = "/conf"
content = ""
[module.n.file.base]
path = "/base"
content = ""
requires = ["m.user-conf"]
[module.n.file.other]
path = "/other"
content = ""
)",
       .order = {"m.user-conf", "n.base", "m.app", "n.other"}},
      {.name = "ProcessAfterWhatItRestartsOn",
       .text = "[module.m.process.p]\nbundle = \"" + kDigestA +
               "\"\nunit = { ExecStart = \"x\" }\nrestart-on = [\"m.conf\"]\n"
               "[module.m.file.conf]\npath = \"/conf\"\ncontent = \"\"\n",
       .order = {"m.conf", "m.p"}},
      // etc frees current and confd; current was declared first, so it goes first.
      {.name = "ImpliedParentDirectoryComesFirst",
       .text = R"(
[module.m.file.conf]
path = "/etc/m/conf.d/main.conf"
content = ""
[module.m.link.current]
path = "/etc/m/current"
target = "conf.d"
[module.m.directory.confd]
path = "/etc/m/conf.d"
[module.m.directory.etc]
path = "/etc/m"
[module.m.directory.unrelated]
path = "/etc/mm"
)",
       .order = {"m.etc", "m.current", "m.confd", "m.conf", "m.unrelated"}},
      // The directory requires a file elsewhere; a file inside it comes after both.
      {.name = "ParentEdgeWithoutACycle",
       .text = R"(
[module.m.file.inner]
path = "/d/inner"
content = ""
[module.m.directory.d]
path = "/d"
requires = ["m.marker"]
[module.m.file.marker]
path = "/marker"
content = ""
)",
       .order = {"m.marker", "m.d", "m.inner"}},
  };
}

class Ordered : public ::testing::TestWithParam<Ordering> {};

TEST_P(Ordered, ByItsConstraints) {
  EXPECT_EQ(ids(parse(GetParam().text)), GetParam().order);
}

INSTANTIATE_TEST_SUITE_P(Order, Ordered, ::testing::ValuesIn(orderings()),
                         [](const auto& info) { return std::string(info.param.name); });

// A declaration whose order is impossible, and what its refusal must hold.
struct Cycle {
  const char* name;  // the case's test: Order/Cyclic.RefusedNamingTheCycle/<name>
  std::string text;
  std::vector<std::string> says;  // each somewhere in the message
};

void PrintTo(const Cycle& c, std::ostream* os) {
  *os << c.name;
}

// Six lines: directories `x` and `y` of `module`, at /x and /y, each requiring
// the other.
std::string directoriesRequiringEachOther(const std::string& module, const std::string& x,
                                          const std::string& y) {
  return fmt::format(
      "[module.{0}.directory.{1}]\npath = \"/{1}\"\nrequires = [\"{0}.{2}\"]\n"
      "[module.{0}.directory.{2}]\npath = \"/{2}\"\nrequires = [\"{0}.{1}\"]\n",
      module, x, y);
}

std::vector<Cycle> cycles() {
  return {
      {.name = "RequiresCycleNamesTheWholeCycle",
       .text = R"([module.a.file.x]
path = "/x"
content = ""
requires = ["a.y"]
[module.a.file.y]
path = "/y"
content = ""
requires = ["a.z"]
[module.a.file.z]
path = "/z"
content = ""
requires = ["a.x"]
)",
       .says = {"decl.toml:1:1: error: dependency cycle: a.x -> a.y -> a.z -> a.x"}},
      {.name = "TwoResourceCycle",
       .text = directoriesRequiringEachOther("a", "p", "q"),
       .says = {"decl.toml:1:1: error: dependency cycle: a.p -> a.q -> a.p"}},
      {.name = "CycleThroughParentDirectoryIsExplained",
       .text = R"([module.a.directory.d]
path = "/d"
requires = ["a.f"]
[module.a.file.f]
path = "/d/f"
content = ""
)",
       .says = {"decl.toml:1:1: error: dependency cycle: a.d -> a.f -> a.d",
                "a.f is inside directory a.d"}},
      {.name = "CycleThroughRestartOn",
       .text = "[module.a.file.conf]\npath = \"/c\"\ncontent = \"\"\n"
               "requires = [\"a.p\"]\n[module.a.process.p]\nbundle = \"" +
               kDigestA + "\"\nunit = { ExecStart = \"x\" }\nrestart-on = [\"a.conf\"]\n",
       .says = {"decl.toml:1:1: error: dependency cycle: a.conf -> a.p -> a.conf",
                "a.p restarts on a.conf"}},
      {.name = "SeparateCyclesAreEachReported",
       .text = directoriesRequiringEachOther("a", "p", "q") +
               directoriesRequiringEachOther("b", "r", "s"),
       .says = {"decl.toml:1:1: error: dependency cycle: a.p -> a.q -> a.p",
                "decl.toml:7:1: error: dependency cycle: b.r -> b.s -> b.r"}},
  };
}

class Cyclic : public ::testing::TestWithParam<Cycle> {};

TEST_P(Cyclic, RefusedNamingTheCycle) {
  auto msg = errorOf(GetParam().text);
  for (const auto& s : GetParam().says)
    EXPECT_NE(msg.find(s), std::string::npos) << s << "\n" << msg;
}

INSTANTIATE_TEST_SUITE_P(Order, Cyclic, ::testing::ValuesIn(cycles()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace mesh::decl
