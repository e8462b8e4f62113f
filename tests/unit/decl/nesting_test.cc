// Paths that can never be managed as declared: anything inside an archive
// (whose tree mesh-host replaces whole), anything beneath a link (never
// followed inside declared paths), anything in mesh-host's own state directory.
// Each is refused at parse, at the inner resource's path, naming both.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "decl_test.hh"

namespace mesh::decl {
namespace {

using test::errorOf;
using test::kDigestA;
using test::parse;

std::string archive(const std::string& name, const std::string& path) {
  return fmt::format("[module.m.archive.{}]\npath = \"{}\"\nbundle = \"{}\"\n", name, path,
                     kDigestA);
}
std::string file(const std::string& name, const std::string& path) {
  return fmt::format("[module.m.file.{}]\npath = \"{}\"\ncontent = \"\"\n", name, path);
}
std::string link(const std::string& name, const std::string& path, const std::string& target) {
  return fmt::format("[module.m.link.{}]\npath = \"{}\"\ntarget = \"{}\"\n", name, path, target);
}

size_t lineCount(const std::string& message) {
  return message.empty() ? 0 : 1 + std::count(message.begin(), message.end(), '\n');
}

TEST(Nesting, FileInsideArchive) {
  EXPECT_EQ(errorOf(archive("app", "/srv/app") + file("conf", "/srv/app/config")),
            "decl.toml:5:8: error: file m.conf at '/srv/app/config' is inside archive m.app at "
            "'/srv/app' (at decl.toml:2:8); mesh-host replaces an archive's tree whole, so it "
            "would delete the file or count it as drift; declare it outside /srv/app or put the "
            "file in the bundle");
}

TEST(Nesting, FileDeclaredBeforeTheArchiveAndDeepInside) {
  EXPECT_EQ(errorOf(file("conf", "/srv/app/etc/deep/config") + archive("app", "/srv/app")),
            "decl.toml:2:8: error: file m.conf at '/srv/app/etc/deep/config' is inside archive "
            "m.app at '/srv/app' (at decl.toml:5:8); mesh-host replaces an archive's tree whole, "
            "so it would delete the file or count it as drift; declare it outside /srv/app or put "
            "the file in the bundle");
}

TEST(Nesting, ArchiveInsideArchive) {
  EXPECT_EQ(errorOf(archive("outer", "/opt/m") + archive("inner", "/opt/m/plugins")),
            "decl.toml:5:8: error: archive m.inner at '/opt/m/plugins' is inside archive m.outer "
            "at '/opt/m' (at decl.toml:2:8); mesh-host replaces an archive's tree whole, so one "
            "archive cannot hold another; declare it outside /opt/m or merge the two bundles");
}

TEST(Nesting, EveryKindInsideArchive) {
  auto msg = errorOf(archive("app", "/srv/app") +
                     "[module.m.directory.d]\npath = \"/srv/app/data\"\n"  // 4
                     "[module.m.credential.k]\npath = \"/srv/app/key\"\n"  // 6
                     "sealed = \"x\"\n" +                                  //
                     link("l", "/srv/app/current", "/srv/app/v1"));        // 9
  EXPECT_EQ(lineCount(msg), 3u) << msg;
  EXPECT_NE(msg.find("decl.toml:5:8: error: directory m.d at '/srv/app/data' is inside archive "
                     "m.app at '/srv/app' (at decl.toml:2:8); mesh-host replaces an archive's "
                     "tree whole, so it would delete the directory or count it as drift; declare "
                     "it outside /srv/app or put the directory in the bundle"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("decl.toml:7:8: error: credential m.k at '/srv/app/key' is inside archive "
                     "m.app at '/srv/app' (at decl.toml:2:8); mesh-host replaces an archive's "
                     "tree whole, so it would delete the credential or count it as drift; "
                     "declare it outside /srv/app (a secret does not belong in a bundle)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("decl.toml:10:8: error: link m.l at '/srv/app/current' is inside archive "
                     "m.app at '/srv/app' (at decl.toml:2:8);"),
            std::string::npos)
      << msg;
}

TEST(Nesting, PathBeneathLinkSuggestsWhereItPoints) {
  EXPECT_EQ(errorOf(link("current", "/opt/m/current", "/opt/m/releases/1.2") +
                    file("conf", "/opt/m/current/etc/config")),
            "decl.toml:5:8: error: file m.conf at '/opt/m/current/etc/config' is beneath link "
            "m.current at '/opt/m/current' (at decl.toml:2:8); mesh-host never follows links "
            "inside declared paths, so it could never reach it; declare it at the path the link "
            "points to ('/opt/m/releases/1.2/etc/config') or drop the link");
}

TEST(Nesting, RelativeLinkTargetIsResolvedForTheSuggestion) {
  auto msg = errorOf(link("current", "/opt/m/current", "../m-1.2/.") +
                     "[module.m.directory.d]\npath = \"/opt/m/current/data\"\n");
  EXPECT_NE(msg.find("decl.toml:5:8: error: directory m.d at '/opt/m/current/data' is beneath "
                     "link m.current at '/opt/m/current' (at decl.toml:2:8);"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("declare it at the path the link points to ('/opt/m-1.2/data') or drop "
                     "the link"),
            std::string::npos)
      << msg;
}

TEST(Nesting, NoSuggestionIntoAnArchive) {
  // The link points at a declared archive: declaring the file there would be
  // refused too, so the message does not suggest it.
  auto msg = errorOf(archive("app", "/opt/m/app") + link("current", "/opt/m/current", "app") +
                     file("conf", "/opt/m/current/config"));
  EXPECT_EQ(lineCount(msg), 1u) << msg;
  EXPECT_NE(msg.find("decl.toml:8:8: error: file m.conf at '/opt/m/current/config' is beneath "
                     "link m.current at '/opt/m/current' (at decl.toml:5:8); mesh-host never "
                     "follows links inside declared paths, so it could never reach it; declare it "
                     "at the path the link points to or drop the link"),
            std::string::npos)
      << msg;
}

TEST(Nesting, ArchiveBeneathLink) {
  auto msg = errorOf(link("l", "/opt/l", "/opt/real") + archive("app", "/opt/l/app"));
  EXPECT_NE(msg.find("decl.toml:5:8: error: archive m.app at '/opt/l/app' is beneath link m.l "
                     "at '/opt/l' (at decl.toml:2:8);"),
            std::string::npos)
      << msg;
}

TEST(Nesting, SiblingsWithASharedPrefixAreNotInside) {
  EXPECT_NO_THROW(parse(archive("app", "/srv/app") + file("a", "/srv/app2/x") +
                        file("b", "/srv/app-b") + file("c", "/srv/app.d/x") + file("d", "/srv/ap") +
                        link("l", "/opt/cur", "/srv/app") + file("e", "/opt/current/x") +
                        file("f", "/opt/cur2") + "[module.m.directory.srv]\npath = \"/srv\"\n"));
}

TEST(Nesting, ASiblingSortingBetweenDoesNotHideTheInside) {
  // In plain byte order "/a-b" and "/a.d" sort between "/a" and "/a/b" ('-' and
  // '.' are below '/'); the check must still see /a/b inside /a.
  auto msg = errorOf(archive("a", "/a") + file("ab", "/a-b") + file("ad", "/a.d/x") +
                     file("inside", "/a/b"));
  EXPECT_EQ(lineCount(msg), 1u) << msg;
  EXPECT_NE(msg.find("decl.toml:11:8: error: file m.inside at '/a/b' is inside archive m.a"),
            std::string::npos)
      << msg;
}

TEST(Nesting, EverythingBelowIsNamedAgainstTheOutermost) {
  auto msg = errorOf(archive("app", "/a") + link("l", "/a/l", "/x") + file("f", "/a/l/f") +
                     file("g", "/a/l/g/h"));
  EXPECT_EQ(lineCount(msg), 3u) << msg;
  for (const char* where : {"decl.toml:5:8: error: link m.l at '/a/l' is inside archive m.app",
                            "decl.toml:8:8: error: file m.f at '/a/l/f' is inside archive m.app",
                            "decl.toml:11:8: error: file m.g at '/a/l/g/h' is inside archive "
                            "m.app"})
    EXPECT_NE(msg.find(where), std::string::npos) << where << "\n" << msg;
}

TEST(Nesting, EqualPathsAreOnlyADuplicate) {
  auto msg = errorOf(archive("app", "/a") + file("f", "/a") + file("g", "/a/x"));
  EXPECT_EQ(lineCount(msg), 2u) << msg;
  EXPECT_NE(msg.find("decl.toml:5:8: error: duplicate path '/a'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("decl.toml:8:8: error: file m.g at '/a/x' is inside archive m.app"),
            std::string::npos)
      << msg;

  // The archive second: what is below is still inside it.
  msg = errorOf(file("f", "/a") + archive("app", "/a") + file("g", "/a/x"));
  EXPECT_EQ(lineCount(msg), 2u) << msg;
  EXPECT_NE(msg.find("decl.toml:8:8: error: file m.g at '/a/x' is inside archive m.app"),
            std::string::npos)
      << msg;

  // Both of a duplicate inside an archive are inside it.
  msg = errorOf(archive("app", "/a") + file("f", "/a/x") + file("g", "/a/x"));
  EXPECT_EQ(lineCount(msg), 3u) << msg;
  EXPECT_NE(msg.find("decl.toml:5:8: error: file m.f at '/a/x' is inside archive m.app"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("decl.toml:8:8: error: file m.g at '/a/x' is inside archive m.app"),
            std::string::npos)
      << msg;
}

TEST(Nesting, DirectoriesAndFilesMayHoldAnything) {
  // Only archives and links close a subtree; processes have no path.
  EXPECT_NO_THROW(parse("[module.m.directory.d]\npath = \"/etc/m\"\n" + file("f", "/etc/m/f") +
                        archive("app", "/etc/m/app") + "[module.m.process.p]\nbundle = \"" +
                        kDigestA + "\"\nunit = { ExecStart = \"x\" }\n"));
}

TEST(Nesting, ManyResourcesInOneSweep) {
  // 50,000 resources: 10,000 archives each beside 4 files, one file inside.
  std::string text;
  text.reserve(5'000'000);
  for (int i = 0; i < 10'000; ++i) {
    text += archive(fmt::format("a{}", i), fmt::format("/srv/{}/app", i));
    for (int j = 0; j < 4; ++j)
      text += file(fmt::format("f{}x{}", i, j), fmt::format("/srv/{}/app{}/f", i, j));
  }
  EXPECT_EQ(parse(text).resources.size(), 50'000u);
  text += file("inside", "/srv/9999/app/f");
  auto msg = errorOf(text);
  EXPECT_EQ(lineCount(msg), 1u);
  EXPECT_NE(msg.find("file m.inside at '/srv/9999/app/f' is inside archive m.a9999"),
            std::string::npos)
      << msg.substr(0, 500);
}

TEST(Nesting, StateDirectoryWhenItIsUnderTheRoot) {
  auto options = test::defaultOptions();
  options.stateDir = "/var/lib/mesh-host";
  std::string inside = file("bundle", "/var/lib/mesh-host/bundles/x/bin/app") +
                       "[module.m.directory.state]\npath = \"/var/lib/mesh-host\"\n" +
                       file("beside", "/var/lib/mesh-host2") +
                       "[module.m.directory.var]\npath = \"/var/lib\"\n";
  auto msg = errorOf(inside, options);
  EXPECT_EQ(lineCount(msg), 2u) << msg;
  EXPECT_NE(
      msg.find("decl.toml:2:8: error: file m.bundle at '/var/lib/mesh-host/bundles/x/bin/app' "
               "is inside mesh-host's state directory /var/lib/mesh-host (--state-dir), "
               "which holds its state store, keys and process bundles; declare it "
               "elsewhere or run with another --state-dir"),
      std::string::npos)
      << msg;
  EXPECT_NE(msg.find("decl.toml:5:8: error: directory m.state at '/var/lib/mesh-host' is inside "
                     "mesh-host's state directory"),
            std::string::npos)
      << msg;
  std::string above = archive("var", "/var/lib");
  EXPECT_EQ(errorOf(above, options),
            "decl.toml:2:8: error: archive m.var at '/var/lib' would replace mesh-host's state "
            "directory /var/lib/mesh-host (--state-dir) with the bundle's tree; declare it "
            "elsewhere or run with another --state-dir");

  // Without a state directory under the root there is nothing to collide with.
  options.stateDir.clear();
  EXPECT_NO_THROW(parse(inside, options));
  EXPECT_NO_THROW(parse(above, options));
}

}  // namespace
}  // namespace mesh::decl
