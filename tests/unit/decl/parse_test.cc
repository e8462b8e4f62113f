// Declarations that parse: every kind's values, defaults and accepted forms.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "decl/parse.hh"
#include "decl_test.hh"

namespace mesh::decl {
namespace {

using test::errorOf;
using test::kDigestA;
using test::kDigestB;
using test::parse;

const Resource& only(const Declaration& d) {
  EXPECT_EQ(d.resources.size(), 1u);
  return d.resources.at(0);
}

// No resources at all only when the declaration says so (parse_errors_test.cc:
// EmptyDeclaration*): applying it removes everything mesh-host manages.
TEST(Parse, EmptyDeclarationThatSaysSo) {
  const std::string text = "empty = true\n";
  auto d = parse(text);
  EXPECT_TRUE(d.resources.empty());
  EXPECT_TRUE(d.empty);
  EXPECT_FALSE(d.node);
  EXPECT_EQ(d.source, "decl.toml");
  EXPECT_EQ(d.digest, Digest::ofBytes(text));
  auto withNode = parse("# retire this node\nnode = \"laptop\"\nserial = 3\nempty = true\n");
  EXPECT_TRUE(withNode.empty);
  EXPECT_EQ(withNode.node, "laptop");
  EXPECT_EQ(withNode.serial, 3);
}

TEST(Parse, EmptyIsFalseUnlessSaid) {
  EXPECT_FALSE(parse("[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\n").empty);
  EXPECT_FALSE(parse("empty = false\n[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\n").empty);
}

TEST(Parse, NodeMatchingOptionIsKept) {
  std::string text = "node = \"laptop\"\nempty = true\n";
  auto d = parse(text);
  EXPECT_EQ(d.node, "laptop");
  EXPECT_EQ(d.digest, Digest::ofBytes(text));
  EXPECT_EQ(d.text, text);
}

TEST(Parse, FileWithContent) {
  auto d = parse(R"(
[module.node-tools.file.config]
path = "/etc/node-tools/config.toml"
content = "listen = 1\n"
mode = "0640"
owner = "root"
group = "0"
)");
  const Resource& r = only(d);
  EXPECT_EQ(r.id, "node-tools.config");
  EXPECT_EQ(r.module(), "node-tools");
  EXPECT_EQ(r.name(), "config");
  EXPECT_EQ(r.kind, Kind::File);
  EXPECT_EQ(r.pos.str(), "decl.toml:2:1");
  EXPECT_EQ(r.pos.file(), "decl.toml");
  EXPECT_EQ(Position{}.str(), "");  // no file known
  const auto& s = std::get<FileSpec>(r.spec);
  EXPECT_EQ(s.path, "/etc/node-tools/config.toml");
  EXPECT_EQ(r.path(), s.path);
  EXPECT_EQ(s.content, "listen = 1\n");
  EXPECT_FALSE(s.blob);
  EXPECT_EQ(s.mode, 0640u);
  EXPECT_EQ(s.owner, Principal{"root"});
  EXPECT_EQ(s.group, Principal{"0"});
}

TEST(Parse, FileWithBlobAndDefaults) {
  auto d = parse("[module.m.file.f]\npath = \"/f\"\nblob = \"" + kDigestA + "\"\n");
  const auto& s = std::get<FileSpec>(only(d).spec);
  EXPECT_EQ(s.blob->str(), kDigestA);
  EXPECT_FALSE(s.content);
  EXPECT_EQ(s.mode, 0644u);
  EXPECT_FALSE(s.owner);
  EXPECT_FALSE(s.group);
}

TEST(Parse, Directory) {
  auto d = parse("[module.m.directory.d]\npath = \"/var/lib/m\"\nowner = \"www-data\"\n");
  const auto& s = std::get<DirectorySpec>(only(d).spec);
  EXPECT_EQ(s.path, "/var/lib/m");
  EXPECT_EQ(s.mode, 0755u);
  EXPECT_EQ(s.owner, Principal{"www-data"});
}

TEST(Parse, LinkTargetIsVerbatim) {
  auto d = parse("[module.m.link.l]\npath = \"/opt/m/current\"\ntarget = \"../m-1.2/./x\"\n");
  const auto& s = std::get<LinkSpec>(only(d).spec);
  EXPECT_EQ(s.path, "/opt/m/current");
  EXPECT_EQ(s.target, "../m-1.2/./x");
}

TEST(Parse, ArchiveWithLimits) {
  auto d = parse("[module.m.archive.a]\npath = \"/opt/m\"\nbundle = \"" + kDigestB +
                 "\"\nmax-entries = 10\nmax-bytes = 1_000_000\n");
  const auto& s = std::get<ArchiveSpec>(only(d).spec);
  EXPECT_EQ(s.path, "/opt/m");
  EXPECT_EQ(s.bundle.str(), kDigestB);
  EXPECT_EQ(s.maxEntries, 10u);
  EXPECT_EQ(s.maxBytes, 1000000u);
}

TEST(Parse, ArchiveDefaults) {
  auto d = parse("[module.m.archive.a]\npath = \"/opt/m\"\nbundle = \"" + kDigestB + "\"\n");
  const auto& s = std::get<ArchiveSpec>(only(d).spec);
  EXPECT_EQ(s.maxEntries, ArchiveSpec{}.maxEntries);
  EXPECT_EQ(s.maxBytes, ArchiveSpec{}.maxBytes);
  EXPECT_FALSE(s.replace);
  EXPECT_FALSE(s.keepModes);
}

TEST(Parse, ArchiveReplaceAndKeepModes) {
  auto d = parse("[module.m.archive.a]\npath = \"/opt/m\"\nbundle = \"" + kDigestB +
                 "\"\nreplace = true\nkeep-modes = true\n"
                 "[module.m.archive.b]\npath = \"/opt/n\"\nbundle = \"" +
                 kDigestB + "\"\nreplace = false\nkeep-modes = false\n");
  ASSERT_EQ(d.resources.size(), 2u);
  const auto& a = std::get<ArchiveSpec>(d.resources[0].spec);
  EXPECT_TRUE(a.replace);
  EXPECT_TRUE(a.keepModes);
  const auto& b = std::get<ArchiveSpec>(d.resources[1].spec);
  EXPECT_FALSE(b.replace);
  EXPECT_FALSE(b.keepModes);
}

TEST(Parse, ArchiveKeysAreIndependent) {
  auto d = parse("[module.m.archive.a]\npath = \"/opt/m\"\nbundle = \"" + kDigestB +
                 "\"\nkeep-modes = true\n");
  const auto& s = std::get<ArchiveSpec>(only(d).spec);
  EXPECT_FALSE(s.replace);
  EXPECT_TRUE(s.keepModes);
}

TEST(Parse, CredentialSealedDefaultsTo0600) {
  auto d = parse("[module.m.credential.key]\npath = \"/etc/m/key\"\nsealed = \"c2VhbGVk\"\n");
  const auto& s = std::get<CredentialSpec>(only(d).spec);
  EXPECT_EQ(s.path, "/etc/m/key");
  EXPECT_EQ(s.sealed, "c2VhbGVk");
  EXPECT_FALSE(s.from);
  EXPECT_EQ(s.mode, 0600u);
}

TEST(Parse, CredentialRelativeFromIsResolvedAgainstBaseDir) {
  auto d = parse(
      "[module.m.credential.key]\npath = \"/etc/m/key\"\n"
      "from = \"secrets/../keys/./m.key\"\n");
  const auto& s = std::get<CredentialSpec>(only(d).spec);
  EXPECT_EQ(s.from, "/srv/decl/keys/m.key");
}

TEST(Parse, CredentialAbsoluteFromIsNormalised) {
  auto d = parse("[module.m.credential.key]\npath = \"/etc/m/key\"\nfrom = \"/a//b/../c\"\n");
  EXPECT_EQ(std::get<CredentialSpec>(only(d).spec).from, "/a/c");
}

TEST(Parse, ProcessWithUnitAndDefaultService) {
  auto d = parse("[module.node-tools.process.runtime]\nbundle = \"" + kDigestA + R"("
unit = { ExecStart = "{bundle}/bin/node-tools serve", Restart = "always", Environment = ["A=1", "B=2"] }
)");
  const Resource& r = only(d);
  EXPECT_EQ(r.path(), "");
  const auto& s = std::get<ProcessSpec>(r.spec);
  EXPECT_EQ(s.bundle.str(), kDigestA);
  EXPECT_EQ(s.service, "node-tools.service");
  ASSERT_EQ(s.unit.size(), 3u);
  EXPECT_EQ(s.unit.at("ExecStart"), UnitValue{"{bundle}/bin/node-tools serve"});
  EXPECT_EQ(s.unit.at("Restart"), UnitValue{"always"});
  EXPECT_EQ(s.unit.at("Environment"), (UnitValue{"A=1", "B=2"}));
}

TEST(Parse, ProcessNamedServiceAndRestartOn) {
  auto d = parse(R"(
[module.m.file.conf]
path = "/etc/m.conf"
content = "x"

[module.m.process.worker]
bundle = ")" + kDigestA +
                 R"("
service = "m-worker@1.service"
restart-on = ["m.conf"]
requires = ["m.conf"]
[module.m.process.worker.unit]
ExecStart = "{bundle}/bin/worker"
)");
  ASSERT_EQ(d.resources.size(), 2u);
  const Resource& r = d.resources[1];
  const auto& s = std::get<ProcessSpec>(r.spec);
  EXPECT_EQ(s.service, "m-worker@1.service");
  EXPECT_EQ(r.restartOn, std::vector<std::string>{"m.conf"});
  EXPECT_EQ(r.requires_, std::vector<std::string>{"m.conf"});
  EXPECT_EQ(s.unit.at("ExecStart"), UnitValue{"{bundle}/bin/worker"});
}

TEST(Parse, ProcessReloadOn) {
  auto d = parse(R"(
[module.m.file.conf]
path = "/etc/m.conf"
content = "x"

[module.m.file.key]
path = "/etc/m.key"
content = "k"

[module.m.process.worker]
bundle = ")" + kDigestA +
                 R"("
restart-on = ["m.key"]
reload-on = ["m.conf"]
unit = { ExecStart = "{bundle}/bin/worker", ExecReload = "/bin/kill -HUP $MAINPID" }
)");
  ASSERT_EQ(d.resources.size(), 3u);
  const Resource& r = d.resources[2];
  EXPECT_EQ(r.id, "m.worker") << "a process comes after what it reloads on";
  EXPECT_EQ(r.restartOn, std::vector<std::string>{"m.key"});
  EXPECT_EQ(r.reloadOn, std::vector<std::string>{"m.conf"});
}

// Regression: X- keys (systemd's extension keys, ignored by systemd; X-LogMaxBytes is
// the built-in supervisor's log size) were refused as "not a unit directive name".
TEST(Parse, ProcessExtensionUnitKeys) {
  auto d = parse(R"(
[module.m.process.worker]
bundle = ")" + kDigestA +
                 R"("
unit = { ExecStart = "{bundle}/bin/worker", X-LogMaxBytes = "4096", X-Vendor-Tag = "blue" }
)");
  ASSERT_EQ(d.resources.size(), 1u);
  const auto& s = std::get<ProcessSpec>(d.resources[0].spec);
  EXPECT_EQ(s.unit.at("X-LogMaxBytes"), UnitValue{"4096"});
  EXPECT_EQ(s.unit.at("X-Vendor-Tag"), UnitValue{"blue"});
}

TEST(Parse, ModeAsStringAndOctalLiteral) {
  auto d = parse(R"(
[module.m.file.a]
path = "/a"
content = ""
mode = "644"
[module.m.file.b]
path = "/b"
content = ""
mode = 0o4755
[module.m.directory.c]
path = "/c"
mode = "1777"
)");
  ASSERT_EQ(d.resources.size(), 3u);
  EXPECT_EQ(std::get<FileSpec>(d.resources[0].spec).mode, 0644u);
  EXPECT_EQ(std::get<FileSpec>(d.resources[1].spec).mode, 04755u);
  EXPECT_EQ(std::get<DirectorySpec>(d.resources[2].spec).mode, 01777u);
}

TEST(Parse, DottedKeysAndInlineTables) {
  auto d = parse(R"(
module.m.file.a = { path = "/a", content = "x" }
module.m.directory.d.path = "/d"
[module.n]
link.l = { path = "/l", target = "/a" }
)");
  ASSERT_EQ(d.resources.size(), 3u);
  EXPECT_EQ(test::ids(d), (std::vector<std::string>{"m.a", "m.d", "n.l"}));
  EXPECT_EQ(d.resources[0].pos.str(), "decl.toml:2:15");  // the inline table's name
  EXPECT_EQ(std::get<LinkSpec>(d.resources[2].spec).target, "/a");
}

TEST(Parse, NumericOwnerAndSystemNames) {
  auto d = parse(R"(
[module.m.file.a]
path = "/a"
content = ""
owner = "1000"
group = "_apt"
[module.m.file.b]
path = "/b"
content = ""
owner = "machine$"
group = "sys.adm-1"
)");
  EXPECT_EQ(std::get<FileSpec>(d.resources[0].spec).owner, Principal{"1000"});
  EXPECT_EQ(std::get<FileSpec>(d.resources[1].spec).owner, Principal{"machine$"});
  EXPECT_EQ(std::get<FileSpec>(d.resources[1].spec).group, Principal{"sys.adm-1"});
}

TEST(Parse, ExistingUsersPassTheCallback) {
  auto options = test::defaultOptions();
  options.userExists = [](const std::string& n) { return n == "app"; };
  options.groupExists = [](const std::string& n) { return n == "app"; };
  auto d = parse(
      "[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nowner = \"app\"\n"
      "group = \"123\"\n",
      options);
  EXPECT_EQ(std::get<FileSpec>(only(d).spec).owner, Principal{"app"});
}

TEST(Load, ReadsFileAndResolvesFromAgainstItsDirectory) {
  std::string dir = ::testing::TempDir() + "mesh-decl-load";
  std::filesystem::create_directories(dir);
  std::string path = dir + "/decl.toml";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_TRUE(f);
    std::fputs("[module.m.credential.k]\npath = \"/etc/k\"\nfrom = \"k.secret\"\n", f);
    std::fclose(f);
  }
  ParseOptions options;
  auto d = loadDeclaration(path, options);
  EXPECT_EQ(d.source, path);
  EXPECT_EQ(std::get<CredentialSpec>(only(d).spec).from, dir + "/k.secret");
}

TEST(Load, UnreadableFileIsAnInputError) {
  try {
    loadDeclaration("/nonexistent/decl.toml", ParseOptions{});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "cannot read declaration /nonexistent/decl.toml: No such file or directory");
  }
}

TEST(Load, UnknownUserOnThisNode) {
  std::string path = ::testing::TempDir() + "mesh-decl-user.toml";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_TRUE(f);
  std::fputs(
      "[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nowner = \"root\"\n"
      "group = \"no-such-group-xyz\"\n",
      f);
  std::fclose(f);
  try {
    loadDeclaration(path, ParseOptions{});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(":5:9: error: no group 'no-such-group-xyz' on this node"), msg.npos) << msg;
    EXPECT_EQ(msg.find("no user"), msg.npos) << "root exists: " << msg;
  }
}

}  // namespace
}  // namespace mesh::decl
