// The compiled form of a declaration (decl/compiled.hh): what is read back is
// what was parsed, to the letter, and anything else — a damaged, truncated or
// foreign form, another text, a user gone since — is refused so the caller parses.
#include "decl/compiled.hh"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "decl_test.hh"

namespace mesh::decl::test {
namespace {

const std::string kEveryKind = R"(node = "laptop"
serial = 7

[module.m.directory.etc]
path = "/etc/m"
mode = "0750"
owner = "root"
group = "0"

[module.m.file.config]
path = "/etc/m/config"
content = "listen = 1\n"
mode = "0640"
requires = ["m.etc"]

[module.m.file.blob]
path = "/etc/m/blob"
blob = ")" + kDigestA + R"("

[module.m.credential.key]
path = "/etc/m/key"
from = "secret.txt"

[module.m.link.current]
path = "/opt/m/current"
target = "../app"

[module.m.archive.app]
path = "/opt/m/app"
bundle = ")" + kDigestB + R"("
max-entries = 12
replace = true

[module.m.process.svc]
bundle = ")" + kDigestB + R"("
restart-on = ["m.key"]
reload-on = ["m.config"]
unit = { ExecStart = "{bundle}/bin/svc", Environment = ["A=1", "B=2"] }
)";

TEST(Compiled, ReadsBackWhatWasParsedToTheLetter) {
  const Declaration d = parse(kEveryKind);
  const std::string form = compileDeclaration(d);
  auto back = loadCompiled(form, d.digest, defaultOptions());
  ASSERT_TRUE(back);
  EXPECT_EQ(compileDeclaration(*back), form);
  EXPECT_TRUE(back->text.empty());  // the caller holds the text
  ASSERT_EQ(back->resources.size(), d.resources.size());
  for (size_t i = 0; i < d.resources.size(); ++i) {
    const auto &a = d.resources[i], &b = back->resources[i];
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.pos.str(), b.pos.str());
    EXPECT_EQ(a.requires_, b.requires_);
    EXPECT_EQ(a.restartOn, b.restartOn);
    EXPECT_EQ(a.reloadOn, b.reloadOn);
    EXPECT_EQ(a.path(), b.path());
    EXPECT_EQ(a.want, b.want);
  }
  EXPECT_EQ(back->serial, 7);
  EXPECT_EQ(back->node, "laptop");
  EXPECT_EQ(back->baseDir, "/srv/decl");
  const auto& file = std::get<FileSpec>(back->resources[1].spec);
  EXPECT_EQ(back->resources[1].id, "m.config");
  EXPECT_EQ(file.content, "listen = 1\n");
  EXPECT_EQ(file.mode, 0640u);
  EXPECT_EQ(file.contentDigest, std::get<FileSpec>(d.resources[1].spec).contentDigest);
  const auto& dir = std::get<DirectorySpec>(back->resources[0].spec);
  EXPECT_EQ(dir.owner->name, "root");
  EXPECT_EQ(dir.group->name, "0");
}

TEST(Compiled, EveryPositionSharesTheDeclarationsFileName) {
  const Declaration d = parse(kEveryKind);
  for (const Declaration& decl :
       {d, *loadCompiled(compileDeclaration(d), d.digest, defaultOptions())}) {
    ASSERT_GE(decl.resources.size(), 2u);
    const auto& first = decl.resources.front().pos.fileName;
    ASSERT_TRUE(first);
    EXPECT_EQ(*first, decl.source);
    for (const auto& r : decl.resources) EXPECT_EQ(r.pos.fileName.get(), first.get()) << r.id;
  }
}

TEST(Compiled, AnyDamagedByteIsRefused) {
  const Declaration d = parse(kEveryKind);
  const std::string form = compileDeclaration(d);
  // Every byte, flipped in turn: the form's own checksum (or its framing) catches it.
  for (size_t i = 0; i < form.size(); ++i) {
    std::string bad = form;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    EXPECT_FALSE(loadCompiled(bad, d.digest, defaultOptions())) << "byte " << i;
  }
  EXPECT_FALSE(loadCompiled(form.substr(0, form.size() / 2), d.digest, defaultOptions()));
  EXPECT_FALSE(loadCompiled("", d.digest, defaultOptions()));
  EXPECT_FALSE(loadCompiled(form + "x", d.digest, defaultOptions()));
}

// `form` as a store hands it over: read in pieces, each read counted.
struct Pieces {
  std::string form;
  size_t reads = 0, largest = 0;
  bool failFromHalf = false;  // a read past the middle fails (a store that went bad)
  FormSource source() {
    return {form.size(), [this](size_t offset, char* out, size_t n) {
              ++reads;
              largest = std::max(largest, n);
              if (offset > form.size() || n > form.size() - offset) return false;
              if (failFromHalf && offset + n > form.size() / 2) return false;
              std::memcpy(out, form.data() + offset, n);
              return true;
            }};
  }
};

TEST(Compiled, ReadInPiecesItIsWhatItIsWhole) {
  // Large enough for many pieces, with strings across their edges and one larger
  // than a piece.
  std::string text = kEveryKind;
  for (int i = 0; i < 1500; ++i)
    text += fmt::format("[module.big.file.f{}]\npath = \"/srv/f{}\"\ncontent = \"{}\"\n", i, i,
                        std::string(static_cast<size_t>(i % 300), 'c'));
  text += "[module.big.file.huge]\npath = \"/srv/huge\"\ncontent = \"" +
          std::string(200 * 1024, 'h') + "\"\n";
  const Declaration d = parse(text);
  Pieces p{compileDeclaration(d)};
  ASSERT_GT(p.form.size(), 500u * 1024);
  const auto source = p.source();
  auto back = loadCompiled(source, d.digest, defaultOptions());
  ASSERT_TRUE(back);
  EXPECT_EQ(compileDeclaration(*back), p.form);
  EXPECT_LE(p.largest, 64u * 1024) << "never read whole";
  EXPECT_GT(p.reads, p.form.size() / (64 * 1024));
  EXPECT_EQ(std::get<FileSpec>(back->resources.back().spec).content->size(), 200u * 1024);
}

TEST(Compiled, ReadInPiecesAnyDamagedByteOrFailedReadIsRefused) {
  const Declaration d = parse(kEveryKind);
  const std::string form = compileDeclaration(d);
  {
    Pieces whole{form};
    const auto source = whole.source();
    EXPECT_TRUE(loadCompiled(source, d.digest, defaultOptions()));
  }
  for (size_t i = 0; i < form.size(); i += 7) {
    Pieces bad{form};
    bad.form[i] = static_cast<char>(bad.form[i] ^ 0x20);
    const auto source = bad.source();
    EXPECT_FALSE(loadCompiled(source, d.digest, defaultOptions())) << "byte " << i;
  }
  for (const std::string& other : {form.substr(0, form.size() / 2), std::string(), form + "x"}) {
    Pieces p{other};
    const auto source = p.source();
    EXPECT_FALSE(loadCompiled(source, d.digest, defaultOptions())) << other.size();
  }
  Pieces failing{form};
  failing.failFromHalf = true;
  const auto source = failing.source();
  EXPECT_FALSE(loadCompiled(source, d.digest, defaultOptions()));
  // Whole, another text's form is refused read in pieces too.
  Pieces whole{form};
  const auto wholeSource = whole.source();
  EXPECT_FALSE(loadCompiled(wholeSource, Digest::ofBytes("other"), defaultOptions()));
}

TEST(Compiled, TheFormOfAnotherTextIsRefused) {
  const Declaration d = parse(kEveryKind);
  EXPECT_FALSE(loadCompiled(compileDeclaration(d), Digest::ofBytes("other"), defaultOptions()));
}

TEST(Compiled, AUserGoneSinceIsRefusedSoParsingSaysSo) {
  const Declaration d = parse(kEveryKind);
  auto options = defaultOptions();
  options.userExists = [](const std::string& name) { return name != "root"; };
  EXPECT_FALSE(loadCompiled(compileDeclaration(d), d.digest, options));
  // A numeric group is never looked up.
  options.userExists = nullptr;
  options.groupExists = [](const std::string&) { return false; };
  EXPECT_TRUE(loadCompiled(compileDeclaration(d), d.digest, options));
}

TEST(Compiled, TheKeyCoversTheTextTheOptionsAndThisBinary) {
  const Digest text = Digest::ofBytes("text");
  const auto o = defaultOptions();
  const std::string key = compiledKey(text, "decl.toml", o);
  EXPECT_TRUE(key.starts_with("sha256:"));
  EXPECT_EQ(compiledKey(text, "decl.toml", o), key);
  EXPECT_NE(compiledKey(Digest::ofBytes("other"), "decl.toml", o), key);
  EXPECT_NE(compiledKey(text, "other.toml", o), key);
  auto node = o;
  node.node = "desktop";
  EXPECT_NE(compiledKey(text, "decl.toml", node), key);
  auto base = o;
  base.baseDir = "/elsewhere";
  EXPECT_NE(compiledKey(text, "decl.toml", base), key);
  auto state = o;
  state.stateDir = "/var/lib/mesh-host";
  EXPECT_NE(compiledKey(text, "decl.toml", state), key);
  // The binary: its version and (with the toolchain's default --build-id) build-id.
  EXPECT_NE(binaryIdentity().find(MESH_HOST_VERSION), std::string::npos) << binaryIdentity();
  EXPECT_GT(binaryIdentity().size(), std::string("mesh-host " MESH_HOST_VERSION " ").size() + 16);
}

// Written to a sink, the form comes in pieces of about 1 MiB, never whole, and is
// the very form compiled whole; asked only its size, it says the same size.
TEST(Compiled, WrittenToASinkItComesInPiecesAndIsTheFormWhole) {
  std::string text;
  for (int i = 0; i < 9000; ++i)
    text += fmt::format("[module.m.file.f{}]\npath = \"/srv/f{}\"\ncontent = \"{}\"\n", i, i,
                        std::string(200, 'x'));
  const auto d = parse(text);
  const std::string whole = compileDeclaration(d);
  ASSERT_GT(whole.size(), size_t{2} << 20);
  std::string joined;
  size_t pieces = 0, largest = 0;
  const size_t size = compileDeclaration(d, [&](std::string_view piece) {
    joined.append(piece);
    ++pieces;
    largest = std::max(largest, piece.size());
  });
  EXPECT_EQ(joined, whole);
  EXPECT_EQ(size, whole.size());
  EXPECT_EQ(compileDeclaration(d, {}), whole.size());
  EXPECT_GE(pieces, 3u);
  EXPECT_LE(largest, (size_t{1} << 20) + 4096);
}

}  // namespace
}  // namespace mesh::decl::test
