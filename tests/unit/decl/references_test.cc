// What a declaration references from the blob and bundle stores
// (decl/references.hh): what `mesh-host gc` keeps. One row per kind in the
// kinds table says which digests a resource of that kind holds on to.
#include "decl/references.hh"

#include "decl/kind_info.hh"
#include "decl_test.hh"

namespace mesh::decl::test {
namespace {

const std::string kDigestC = "sha256:" + std::string(64, 'c');

TEST(References, AreTheFileBlobsArchiveBundlesAndProcessBundles) {
  auto d = parse(R"(
[module.m.file.inline]
path = "/etc/m/inline"
content = "not a blob"

[module.m.file.blob]
path = "/etc/m/blob"
blob = ")" + kDigestA +
                 R"("

[module.m.directory.d]
path = "/etc/m"

[module.m.link.l]
path = "/etc/m/link"
target = "blob"

[module.m.archive.app]
path = "/opt/m"
bundle = ")" + kDigestB +
                 R"("

[module.m.process.daemon]
bundle = ")" + kDigestC +
                 R"("
unit = { ExecStart = "{bundle}/bin/app" }
)");
  std::set<std::string> hex;
  collectReferences(d, hex);
  EXPECT_EQ(hex, (std::set<std::string>{std::string(64, 'a'), std::string(64, 'b'),
                                        std::string(64, 'c')}));
}

TEST(References, AddToWhatIsAlreadyCollected) {
  auto d = parse(R"(
[module.m.archive.app]
path = "/opt/m"
bundle = ")" + kDigestB +
                 R"("
)");
  std::set<std::string> hex{std::string(64, 'f')};
  collectReferences(d, hex);
  EXPECT_EQ(hex, (std::set<std::string>{std::string(64, 'b'), std::string(64, 'f')}));
}

TEST(References, FromTextAreEveryDigestItNamesWhateverTheKey) {
  std::set<std::string> hex;
  collectReferencesFromText("bundle = \"" + kDigestA + "\"\n# once " + kDigestB +
                                "\nblob = \"sha256:" + std::string(63, 'c') + "\"\n",
                            hex);
  EXPECT_EQ(hex, (std::set<std::string>{std::string(64, 'a'), std::string(64, 'b')}));
}

TEST(KindTable, NamesEveryKindOnceAndRoundTrips) {
  EXPECT_EQ(kindList(),
            "file, directory, link, archive, credential, process, service, absent, user, group");
  for (const auto& info : kKindTable) {
    EXPECT_EQ(kindFromName(info.name), info.kind);
    EXPECT_EQ(std::string_view(kindName(info.kind)), info.name);
  }
  EXPECT_EQ(kindFromName("services"), std::nullopt);
}

}  // namespace
}  // namespace mesh::decl::test
