#include "agent/last_good.hh"

#include <gtest/gtest.h>

#include "util/error.hh"

namespace mesh::agent {
namespace {

// A loader over an in-memory "file": text "bad" is a parse error.
struct FakeFile {
  std::string text;
  LastGoodDeclaration::Loader loader() {
    return [this](const std::string& path) {
      if (text == "bad") throw InputError("{}:3:7: error: expected a value", path);
      decl::Declaration d;
      d.source = path;
      d.text = text;
      d.digest = Digest::ofBytes(text);
      return d;
    };
  }
};

TEST(LastGoodDeclaration, NothingInForceUntilAGoodLoad) {
  FakeFile file{"bad"};
  LastGoodDeclaration keeper("/etc/decl.toml", file.loader());
  auto r = keeper.reload();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "/etc/decl.toml:3:7: error: expected a value");
  EXPECT_EQ(keeper.current(), nullptr);
  file.text = "one";
  r = keeper.reload();
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.changed);
  ASSERT_NE(keeper.current(), nullptr);
  EXPECT_EQ(keeper.current()->text, "one");
}

TEST(LastGoodDeclaration, ABrokenEditKeepsTheLastGoodOneInForce) {
  FakeFile file{"one"};
  LastGoodDeclaration keeper("d.toml", file.loader());
  ASSERT_TRUE(keeper.reload().ok);
  file.text = "bad";
  auto r = keeper.reload();
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("d.toml:3:7"), std::string::npos) << r.error;
  ASSERT_NE(keeper.current(), nullptr);
  EXPECT_EQ(keeper.current()->text, "one");
  file.text = "two";
  r = keeper.reload();
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(keeper.current()->text, "two");
}

TEST(LastGoodDeclaration, TheSameTextAgainIsNoChange) {
  FakeFile file{"one"};
  LastGoodDeclaration keeper("d.toml", file.loader());
  ASSERT_TRUE(keeper.reload().ok);
  auto r = keeper.reload();
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.changed);
}

}  // namespace
}  // namespace mesh::agent
