// Apply order: explicit requires/restart-on, implied parent directories,
// declaration order otherwise; and the cycles that make an order impossible.
#include <gtest/gtest.h>

#include "decl_test.hh"

namespace mesh::decl {
namespace {

using test::errorOf;
using test::ids;
using test::kDigestA;
using test::parse;
using Ids = std::vector<std::string>;

TEST(Order, TextualOrderWithoutConstraints) {
  auto d = parse(R"(
[module.z.file.c]
path = "/c"
content = ""
[module.a.directory.b]
path = "/b"
[module.m.link.a]
path = "/a"
target = "/c"
)");
  EXPECT_EQ(ids(d), (Ids{"z.c", "a.b", "m.a"}));
}

TEST(Order, RequiresComesFirst) {
  auto d = parse(R"(
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
)");
  EXPECT_EQ(ids(d), (Ids{"m.user-conf", "n.base", "m.app", "n.other"}));
}

TEST(Order, ProcessAfterWhatItRestartsOn) {
  auto d = parse("[module.m.process.p]\nbundle = \"" + kDigestA +
                 "\"\nunit = { ExecStart = \"x\" }\nrestart-on = [\"m.conf\"]\n"
                 "[module.m.file.conf]\npath = \"/conf\"\ncontent = \"\"\n");
  EXPECT_EQ(ids(d), (Ids{"m.conf", "m.p"}));
}

TEST(Order, ImpliedParentDirectoryComesFirst) {
  auto d = parse(R"(
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
)");
  // etc frees current and confd; current was declared first, so it goes first.
  EXPECT_EQ(ids(d), (Ids{"m.etc", "m.current", "m.confd", "m.conf", "m.unrelated"}));
}

TEST(Order, ParentEdgeWithoutACycle) {
  // The directory requires a file elsewhere; a file inside it comes after both.
  auto d = parse(R"(
[module.m.file.inner]
path = "/d/inner"
content = ""
[module.m.directory.d]
path = "/d"
requires = ["m.marker"]
[module.m.file.marker]
path = "/marker"
content = ""
)");
  EXPECT_EQ(ids(d), (Ids{"m.marker", "m.d", "m.inner"}));
}

TEST(Order, RequiresCycleNamesTheWholeCycle) {
  auto msg = errorOf(R"([module.a.file.x]
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
)");
  EXPECT_NE(msg.find("decl.toml:1:1: error: dependency cycle: a.x -> a.y -> a.z -> a.x"),
            std::string::npos)
      << msg;
}

TEST(Order, TwoResourceCycle) {
  auto msg = errorOf(R"([module.a.directory.p]
path = "/p"
requires = ["a.q"]
[module.a.directory.q]
path = "/q"
requires = ["a.p"]
)");
  EXPECT_NE(msg.find("decl.toml:1:1: error: dependency cycle: a.p -> a.q -> a.p"),
            std::string::npos)
      << msg;
}

TEST(Order, CycleThroughParentDirectoryIsExplained) {
  auto msg = errorOf(R"([module.a.directory.d]
path = "/d"
requires = ["a.f"]
[module.a.file.f]
path = "/d/f"
content = ""
)");
  EXPECT_NE(msg.find("decl.toml:1:1: error: dependency cycle: a.d -> a.f -> a.d"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("a.f is inside directory a.d"), std::string::npos) << msg;
}

TEST(Order, CycleThroughRestartOn) {
  auto msg = errorOf(
      "[module.a.file.conf]\npath = \"/c\"\ncontent = \"\"\n"
      "requires = [\"a.p\"]\n[module.a.process.p]\nbundle = \"" +
      kDigestA + "\"\nunit = { ExecStart = \"x\" }\nrestart-on = [\"a.conf\"]\n");
  EXPECT_NE(msg.find("decl.toml:1:1: error: dependency cycle: a.conf -> a.p -> a.conf"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("a.p restarts on a.conf"), std::string::npos) << msg;
}

TEST(Order, SeparateCyclesAreEachReported) {
  auto msg = errorOf(R"([module.a.directory.p]
path = "/p"
requires = ["a.q"]
[module.a.directory.q]
path = "/q"
requires = ["a.p"]
[module.b.directory.r]
path = "/r"
requires = ["b.s"]
[module.b.directory.s]
path = "/s"
requires = ["b.r"]
)");
  EXPECT_NE(msg.find("decl.toml:1:1: error: dependency cycle: a.p -> a.q -> a.p"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("decl.toml:7:1: error: dependency cycle: b.r -> b.s -> b.r"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace mesh::decl
