// A declaration parsed a resource at a time (decl/pieces.hh): where the text is
// cut, which texts are not cut, and that either way a text comes to the same
// declaration, or the same error in the same words at the same place.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "decl/compiled.hh"
#include "decl/depth.hh"
#include "decl/pieces.hh"
#include "decl_test.hh"

namespace mesh::decl {
namespace {

using test::defaultOptions;

std::optional<Pieces> piecesOf(std::string_view text) {
  std::vector<size_t> headers;
  EXPECT_FALSE(tooDeep(text, kMaxNesting, &headers));
  return resourcePieces(text, headers);
}

// The compiled form of what `text` parses to, or its error, parsed as asked.
std::string outcomeOf(const std::string& text, bool inPieces) {
  ParseOptions o = defaultOptions();
  o.inPieces = inPieces;
  try {
    return compileDeclaration(parseDeclaration(text, "decl.toml", o));
  } catch (const InputError& e) {
    return std::string("error: ") + e.what();
  }
}

TEST(Pieces, APlainTextIsCutAtEachHeaderWithTheLineItStartsOn) {
  const std::string text =
      "node = \"laptop\"\n"
      "\n"
      "[module.a.file.x]   # the first\n"
      "path = \"/x\"\r\n"
      "content = \"\"\"\n"
      "two\n"
      "lines\"\"\"\n"
      "[module.a.directory.y]\n"
      "path = \"/y\"\n";
  const auto p = piecesOf(text);
  ASSERT_TRUE(p);
  EXPECT_EQ(text.substr(p->top.begin, p->top.end), "node = \"laptop\"\n\n");
  ASSERT_EQ(p->resources.size(), 2u);
  EXPECT_EQ(p->resources[0].line, 3);
  EXPECT_TRUE(text.substr(p->resources[0].begin).starts_with("[module.a.file.x]"));
  EXPECT_EQ(p->resources[0].end, p->resources[1].begin);
  EXPECT_EQ(p->resources[1].line, 8);
  EXPECT_TRUE(text.substr(p->resources[1].begin).starts_with("[module.a.directory.y]"));
  EXPECT_EQ(p->resources[1].end, text.size());
}

TEST(Pieces, ATextOfAnyOtherShapeIsNotCut) {
  for (const std::string text : {
           "[module.a.file.x]\n[module.a.file.x]\n",  // a header twice
           "[module.a.file]\nx.path = \"/x\"\n",      // a kind's table
           "[module.a.file.x.y]\nz = 1\n",            // deeper
           "[module.\"a\".file.x]\npath = \"/x\"\n",  // a quoted key
           "[ module.a.file.x ]\npath = \"/x\"\n",    // spaces inside
           "  [module.a.file.x]\npath = \"/x\"\n",    // indented
           "[[module.a.file.x]]\npath = \"/x\"\n",    // an array of tables
           "[module.a.file.x] path = \"/x\"\n",       // more on its line
           "[module.a.file.x]\n[module]\n",           // a module table
           "[module.a.file.x]\n[other.a.b.c]\n",      // not under module
       })
    EXPECT_FALSE(piecesOf(text)) << text;
}

TEST(Pieces, AFakeHeaderInsideAStringOrAnArrayIsNotACut) {
  const std::string text =
      "[module.a.file.x]\n"
      "path = \"/x\"\n"
      "content = '''\n"
      "[module.a.file.y]\n"
      "'''\n"
      "[module.a.process.p]\n"
      "bundle = \"" +
      test::kDigestA +
      "\"\n"
      "unit.ExecStart = \"/bin/true\"\n"
      "unit.Environment = [\n"
      "  \"A=1\",\n"
      "  # [module.a.file.z]\n"
      "]\n";
  const auto p = piecesOf(text);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->resources.size(), 2u);
  EXPECT_EQ(p->resources[1].line, 6);
  EXPECT_EQ(outcomeOf(text, true), outcomeOf(text, false));
  EXPECT_FALSE(outcomeOf(text, true).starts_with("error: ")) << outcomeOf(text, true);
}

// Each text parsed whole and a resource at a time: the same declaration (its
// compiled form, positions and all), or the same errors, word for word.
TEST(Pieces, EveryTextComesToTheSameDeclarationOrErrorEitherWay) {
  const std::string digest = test::kDigestA;
  const std::vector<std::string> texts = {
      // plain and valid
      "node = \"laptop\"\n[module.a.file.x]\npath = \"/x\"\ncontent = \"x\"\n"
      "[module.a.directory.d]\npath = \"/d\"\n[module.b.link.l]\npath = \"/d/l\"\n"
      "target = \"/x\"\nrequires = [\"a.d\"]\n",
      // CRLF and comments after the headers
      "[module.a.file.x] # one\r\npath = \"/x\"\r\ncontent = \"x\"\r\n\r\n"
      "[module.a.file.y]\t# two\r\npath = \"/y\"\r\ncontent = \"y\"\r\n",
      // resources out of module order: the apply order is the text's
      "[module.b.file.x]\npath = \"/b\"\ncontent = \"\"\n[module.a.file.y]\npath = \"/a\"\n"
      "content = \"\"\n",
      // a field error in a later piece, a reference error across pieces
      "[module.a.file.x]\npath = \"/x\"\ncontent = \"x\"\n\n\n[module.a.file.y]\npath = \"/y\"\n"
      "content = \"y\"\nmode = \"999\"\nrequires = [\"a.nope\"]\n",
      // a TOML error in a later piece: toml++'s words, at its place in the whole text
      "[module.a.file.x]\npath = \"/x\"\ncontent = \"x\"\n[module.a.file.y]\npath = \n",
      "[module.a.file.x]\npath = \"/x\"\ncontent = \"unclosed\n[module.a.file.y]\npath = \"/y\"\n",
      // a key twice in one piece; a header twice
      "[module.a.file.x]\npath = \"/x\"\npath = \"/y\"\n",
      "[module.a.file.x]\npath = \"/x\"\ncontent = \"\"\n[module.a.file.x]\ncontent = \"\"\n",
      // a resource given by a dotted key at the top as well as by a header
      "module.a.file.y.path = \"/y\"\nmodule.a.file.y.content = \"\"\n[module.a.file.x]\n"
      "path = \"/x\"\ncontent = \"\"\n",
      "module.a.file.x.path = \"/y\"\n[module.a.file.x]\npath = \"/x\"\n",
      // duplicates the checks across resources find
      "[module.a.file.x]\npath = \"/x\"\ncontent = \"\"\n[module.b.file.x]\npath = \"/x\"\n"
      "content = \"\"\n",
      "[module.a.file.x]\npath = \"/x\"\ncontent = \"\"\nrequires = [\"a.y\"]\n[module.a.file.y]\n"
      "path = \"/y\"\ncontent = \"\"\nrequires = [\"a.x\"]\n",
      // a process with tables in its table, a kind that does not exist, a bad name
      "[module.a.process.p]\nbundle = \"" + digest +
          "\"\nunit.ExecStart = \"/bin/true\"\nhealth = { exec = \"/bin/true\" }\n",
      "[module.a.thing.x]\npath = \"/x\"\n",
      "[module.a.file.x-y_z]\npath = \"/x\"\ncontent = \"\"\n[module.a.file.b]\npath = 1\n",
      // the top after nothing, and nothing at all
      "node = \"laptop\"\nserial = 3\n",
      "empty = true\n",
      "",
      "node = \"other\"\n[module.a.file.x]\npath = \"/x\"\ncontent = \"\"\n",
  };
  for (const auto& text : texts) EXPECT_EQ(outcomeOf(text, true), outcomeOf(text, false)) << text;
}

TEST(Pieces, AnErrorInALaterPieceNamesItsLineInTheWholeText) {
  const std::string text =
      "[module.a.file.x]\npath = \"/x\"\ncontent = \"\"\n\n"
      "[module.a.file.y]\npath = \"/y\"\ncontent = \"\"\nmode = \"999\"\n";
  ASSERT_TRUE(piecesOf(text));
  EXPECT_NE(test::errorOf(text).find("decl.toml:8:8: error: "), std::string::npos)
      << test::errorOf(text);
  const std::string broken = "[module.a.file.x]\npath = \"/x\"\n[module.a.file.y]\npath = \n";
  EXPECT_NE(test::errorOf(broken).find("decl.toml:4:"), std::string::npos) << test::errorOf(broken);
}

}  // namespace
}  // namespace mesh::decl
