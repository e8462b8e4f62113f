#include "bundle/path.hh"

#include <gtest/gtest.h>

namespace mesh::bundle {
namespace {

std::string normal(std::string_view name) {
  auto r = normaliseEntryName(name);
  if (auto* bad = std::get_if<BadName>(&r)) return "refused: " + bad->why;
  return std::get<std::string>(r);
}

TEST(EntryName, NormalForms) {
  EXPECT_EQ(normal("a/b"), "a/b");
  EXPECT_EQ(normal("./a/b"), "a/b");
  EXPECT_EQ(normal("././a//b/"), "a/b");
  EXPECT_EQ(normal("a/./b"), "a/b");
  EXPECT_EQ(normal("./"), "");
  EXPECT_EQ(normal("."), "");
  EXPECT_EQ(normal("dir/"), "dir");
  EXPECT_EQ(normal("..a/b..c"), "..a/b..c");  // dots inside a name are just a name
}

TEST(EntryName, Refusals) {
  EXPECT_EQ(normal(""), "refused: empty name");
  EXPECT_EQ(normal("/etc/passwd"), "refused: absolute path");
  EXPECT_EQ(normal("../x"), "refused: path has a '..' component");
  EXPECT_EQ(normal("a/../../x"), "refused: path has a '..' component");
  EXPECT_EQ(normal("a/.."), "refused: path has a '..' component");
  EXPECT_EQ(normal(std::string_view("a\0b", 3)), "refused: name contains a NUL byte");
  EXPECT_EQ(normal("bad\xff"), "refused: name is not valid UTF-8");
}

TEST(EntryName, Utf8) {
  EXPECT_TRUE(isValidUtf8("plain"));
  EXPECT_TRUE(isValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(isValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(isValidUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(isValidUtf8("\xe2\x82"));          // truncated
  EXPECT_FALSE(isValidUtf8("\xf4\x90\x80\x80"));  // beyond U+10FFFF
}

TEST(EntryName, Parts) {
  EXPECT_EQ(parentPath("a/b/c"), "a/b");
  EXPECT_EQ(parentPath("a"), "");
  EXPECT_EQ(lastComponent("a/b/c"), "c");
  EXPECT_EQ(lastComponent("a"), "a");
  auto parts = splitPath("/a//b/");
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0], "a");
  EXPECT_EQ(parts[1], "b");
}

}  // namespace
}  // namespace mesh::bundle
