// The `user` and `group` kinds' keys, and how the names resources give as
// owner, group or User= resolve: an account declared beside is resolved at apply
// time, after it (an implied requires); any other name must exist on the node.
#include <gtest/gtest.h>

#include "decl/compiled.hh"
#include "decl/parse.hh"
#include "decl_test.hh"

namespace mesh::decl {
namespace {

using test::defaultOptions;
using test::errorOf;
using test::parse;

// Only "root" and "adm"/"root" exist on this pretend node.
ParseOptions onNode() {
  ParseOptions o = defaultOptions();
  o.userExists = [](const std::string& n) { return n == "root"; };
  o.groupExists = [](const std::string& n) { return n == "root" || n == "adm"; };
  return o;
}

const std::string kApp = R"(
[module.app.file.config]
path = "/etc/app/config"
content = "x"
owner = "app"
group = "app"

[module.app.user.app]
name = "app"
uid = 990
group = "app"
groups = ["adm", "data"]
home = "/var/lib/app"
shell = "/bin/sh"

[module.app.group.app-group]
name = "app"
gid = 990

[module.app.group.data]
name = "data"
system = false
)";

TEST(AccountKinds, ParseTheirKeys) {
  auto d = parse(kApp, onNode());
  ASSERT_EQ(d.resources.size(), 4u);
  const auto* user = &d.resources[0];
  for (const auto& r : d.resources)
    if (r.kind == Kind::User) user = &r;
  const auto& u = std::get<UserSpec>(user->spec);
  EXPECT_EQ(u.name, "app");
  EXPECT_EQ(u.uid, 990u);
  ASSERT_TRUE(u.group);
  EXPECT_EQ(u.group->name, "app");
  EXPECT_EQ(u.groups, (std::vector<std::string>{"adm", "data"}));
  EXPECT_EQ(u.home, "/var/lib/app");
  EXPECT_EQ(u.shell, "/bin/sh");
  EXPECT_TRUE(u.system);
  EXPECT_EQ(user->path(), "");
}

TEST(AccountKinds, DefaultsAreASystemAccountWithoutShellOrHome) {
  auto d = parse("[module.m.user.svc]\nname = \"svc\"\n");
  const auto& u = std::get<UserSpec>(d.resources.at(0).spec);
  EXPECT_EQ(u.shell, "/usr/sbin/nologin");
  EXPECT_FALSE(u.home);
  EXPECT_FALSE(u.uid);
  EXPECT_FALSE(u.group);
  EXPECT_TRUE(u.system);
  const auto& g =
      std::get<GroupSpec>(parse("[module.m.group.g]\nname = \"g\"\n").resources.at(0).spec);
  EXPECT_TRUE(g.system);
  EXPECT_FALSE(g.gid);
}

// The bug this guards against: an owner that does not exist yet refused the
// whole declaration, so an app running as its own user could not be deployed.
TEST(AccountKinds, ADeclaredAccountMayOwnFilesAndComesFirst) {
  auto d = parse(kApp, onNode());
  std::vector<std::string> order = test::ids(d);
  auto pos = [&](const std::string& id) {
    return std::find(order.begin(), order.end(), id) - order.begin();
  };
  EXPECT_LT(pos("app.app"), pos("app.config"));
  EXPECT_LT(pos("app.app-group"), pos("app.app"));
  EXPECT_LT(pos("app.data"), pos("app.app"));
  for (const auto& r : d.resources)
    if (r.id == "app.config") {
      EXPECT_EQ(r.requires_, (std::vector<std::string>{"app.app", "app.app-group"}));
    }
}

TEST(AccountKinds, AUsersOwnGroupIsDeclaredWithIt) {
  auto d = parse(
      "[module.m.file.f]\npath = \"/f\"\ncontent = \"\"\nowner = \"svc\"\ngroup = \"svc\"\n"
      "[module.m.user.svc]\nname = \"svc\"\n",
      onNode());
  EXPECT_EQ(test::ids(d), (std::vector<std::string>{"m.svc", "m.f"}));
}

TEST(AccountKinds, AProcessRunningAsADeclaredUserComesAfterIt) {
  auto d = parse("[module.m.process.p]\nbundle = \"" + test::kDigestA +
                     "\"\nunit = { ExecStart = \"{bundle}/bin/p\", User = \"svc\" }\n"
                     "[module.m.user.svc]\nname = \"svc\"\n",
                 onNode());
  EXPECT_EQ(test::ids(d), (std::vector<std::string>{"m.svc", "m.p"}));
}

TEST(AccountKinds, AnOwnerNeitherOnTheNodeNorDeclaredIsStillRefused) {
  const std::string e =
      errorOf("[module.m.file.f]\npath = \"/f\"\ncontent = \"\"\nowner = \"ghost\"\n", onNode());
  EXPECT_NE(e.find("decl.toml:4:9: error: no user 'ghost' on this node (owner of file m.f); "
                   "declare it"),
            std::string::npos)
      << e;
  const std::string g =
      errorOf("[module.m.user.svc]\nname = \"svc\"\ngroups = [\"adm\", \"nope\"]\n", onNode());
  EXPECT_NE(g.find("decl.toml:3:18: error: no group 'nope' on this node (groups of user m.svc)"),
            std::string::npos)
      << g;
}

TEST(AccountKinds, BadKeysNameTheirPlace) {
  const std::string e = errorOf(R"([module.m.user.a]
name = "Bad Name"
uid = "12"
shell = "bin/sh"
homedir = "/x"

[module.m.group.g]
gid = 0

[module.m.user.b]
name = "b"
groups = "adm"
restart-on = ["m.a"]
)",
                                onNode());
  for (const char* want :
       {"decl.toml:2:8: error: name 'Bad Name' in user m.a is not a valid user name",
        "decl.toml:3:7: error: uid in user m.a must be an integer, not a string",
        "decl.toml:4:9: error:", "decl.toml:5:1: error:",
        "decl.toml:7:1: error: group m.g has no 'name'",
        "decl.toml:8:7: error: gid 0 in group m.g is out of range",
        "decl.toml:12:10: error: groups in user m.b must be an array of group names",
        "decl.toml:13:1: error: 'restart-on' is only for processes"})
    EXPECT_NE(e.find(want), std::string::npos) << want << "\n" << e;
}

TEST(AccountKinds, OneAccountHasOneResource) {
  const std::string e =
      errorOf("[module.a.user.x]\nname = \"svc\"\n[module.b.user.y]\nname = \"svc\"\n");
  EXPECT_NE(e.find("decl.toml:3:1: error: user 'svc' is declared twice: by a.x and by b.y"),
            std::string::npos)
      << e;
}

TEST(AccountKinds, TheirCompiledFormReadsBackToTheLetter) {
  const Declaration d = parse(kApp, onNode());
  const std::string form = compileDeclaration(d);
  // The declared owner exists nowhere on the node: the form fits all the same.
  auto back = loadCompiled(form, d.digest, onNode());
  ASSERT_TRUE(back);
  EXPECT_EQ(compileDeclaration(*back), form);
  for (size_t i = 0; i < d.resources.size(); ++i) {
    if (const auto* u = std::get_if<UserSpec>(&d.resources[i].spec)) {
      const auto& b = std::get<UserSpec>(back->resources[i].spec);
      EXPECT_EQ(u->name, b.name);
      EXPECT_EQ(u->uid, b.uid);
      EXPECT_EQ(u->groups, b.groups);
      EXPECT_EQ(u->home, b.home);
      EXPECT_EQ(u->shell, b.shell);
      EXPECT_EQ(u->system, b.system);
    }
    EXPECT_EQ(d.resources[i].requires_, back->resources[i].requires_);
  }
}

}  // namespace
}  // namespace mesh::decl
