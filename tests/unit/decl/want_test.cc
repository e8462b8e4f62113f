// The wants made from a spec alone (decl/want.hh) are the very digests the
// appliers recorded before they were made here: the values below are those a
// store written by mesh-host before this change holds for the same declaration
// (`apply`, then `SELECT id, want FROM records`). A want that differed would
// make every such resource look changed to a store written before.
#include "decl/want.hh"

#include <map>

#include "decl/compiled.hh"
#include "decl_test.hh"

namespace mesh::decl::test {
namespace {

const std::string kBundle =
    "sha256:05db2d32f17f53e9e849decc8e2a0175f8fc5cb1ee4104a13308f98b75e26b29";

const std::string kPure = R"(
[module.m.directory.etc]
path = "/etc/m"
mode = "0750"
owner = "root"
group = "0"

[module.m.file.config]
path = "/etc/m/config"
content = "listen = 1\n"
mode = "0640"

[module.m.file.plain]
path = "/etc/m/plain"
content = ""

[module.m.link.current]
path = "/etc/m/current"
target = "../app"

[module.m.archive.app]
path = "/etc/m/app"
bundle = ")" + kBundle + R"("

[module.m.archive.kept]
path = "/etc/m/kept"
bundle = ")" + kBundle + R"("
keep-modes = true

[module.m.credential.key]
path = "/etc/m/key"
from = "secret.txt"

[module.m.process.svc]
bundle = ")" + kBundle + R"("
unit = { ExecStart = "{bundle}/bin/svc" }
)";

const std::map<std::string, std::string> kRecordedBefore = {
    {"m.app", "sha256:27f39fb50a232507ca3142effad21afc58fd0790f98498e699bf541983dab2ba"},
    {"m.config", "sha256:bbf4044678a3b46ceb4b855958fb18b5d9f556adea6336491f9c2107cf9c4d88"},
    {"m.current", "sha256:e775500977161ff75509f135cab399556bd82f9158af4c27aa818414c28c1afc"},
    {"m.etc", "sha256:a5b9402211ce0742ba7bed564ba1ad1a78d4f9cfc5e1e83140a00310d11b86da"},
    {"m.kept", "sha256:9c202209539864fc479161964768bef8242152532138a9fa3b331cad8a52915c"},
    {"m.plain", "sha256:1d27eb877be7907c2ff4d9a851e8f5df1058459b703e40824f01b5dddfc1b04a"},
};

void expectRecordedWants(const Declaration& d) {
  size_t pure = 0;
  for (const auto& r : d.resources) {
    if (!wantIsOfSpec(r.kind)) {
      EXPECT_TRUE(r.want.empty()) << r.id << ": a want of the node, made by its applier";
      EXPECT_TRUE(specWant(r).empty()) << r.id;
      continue;
    }
    ++pure;
    ASSERT_TRUE(kRecordedBefore.count(r.id)) << r.id;
    EXPECT_EQ(r.want.str(), kRecordedBefore.at(r.id)) << r.id;
    EXPECT_EQ(wantOf(r), r.want) << r.id;
    EXPECT_EQ(specWant(r), r.want) << r.id;
  }
  EXPECT_EQ(pure, kRecordedBefore.size());
}

TEST(SpecWant, MadeWhenParsedAsRecordedBefore) {
  expectRecordedWants(parse(kPure));
}

TEST(SpecWant, KeptByTheCompiledFormAsRecordedBefore) {
  const Declaration d = parse(kPure);
  auto back = loadCompiled(compileDeclaration(d), d.digest, defaultOptions());
  ASSERT_TRUE(back);
  expectRecordedWants(*back);
}

TEST(SpecWant, MadeWhenNotKept) {
  Declaration d = parse(kPure);
  for (auto& r : d.resources) {
    const Digest made = r.want;
    r.want = Digest::none();
    EXPECT_EQ(wantOf(r), made) << r.id;
  }
}

}  // namespace
}  // namespace mesh::decl::test
