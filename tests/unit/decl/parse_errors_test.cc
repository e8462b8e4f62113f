// Declarations that must be refused: a table with one case per kind of mistake,
// each checking that the message names the place (file:line:column) and the
// fault; then the refusals a table does not say as well.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "decl/depth.hh"
#include "decl/toml_lex.hh"
#include "decl/unit_keys.hh"
#include "decl_test.hh"

namespace mesh::decl {
namespace {

using test::errorOf;
using test::kDigestA;

// Expects `message` to hold `where` ("decl.toml:3:1") as an error line's start
// and every one of `words`.
void expectError(const std::string& message, const std::string& where,
                 const std::vector<std::string>& words) {
  EXPECT_NE(message.find(where + ": error: "), std::string::npos)
      << "no error at " << where << " in:\n"
      << message;
  for (const auto& w : words) EXPECT_NE(message.find(w), std::string::npos) << w << "\n" << message;
}

size_t lineCount(const std::string& message) {
  return message.empty() ? 0 : 1 + std::count(message.begin(), message.end(), '\n');
}

// No byte of `message` but the line breaks between its errors is a control
// character: nothing from the declaration reaches a terminal raw.
void expectNoRawControl(const std::string& message) {
  for (size_t i = 0; i < message.size(); ++i) {
    auto u = static_cast<unsigned char>(message[i]);
    EXPECT_TRUE(message[i] == '\n' || (u >= 0x20 && u != 0x7f))
        << "raw byte 0x" << std::hex << int(u) << " at " << std::dec << i << " in:\n"
        << message;
  }
}

// A declaration that must be refused, and what its message must say.
struct Refusal {
  const char* name;  // the case's test: ParseError/Refused.NamesPlaceAndFault/<name>
  std::string text;  // the declaration (decl.toml)
  struct Error {
    std::string where;               // "decl.toml:3:1"
    std::vector<std::string> words;  // each somewhere in the message
  };
  std::vector<Error> errors;  // each an error line's place and what the message holds
  size_t lines = 0;           // not 0: the message has exactly this many lines
  bool noRawControl = false;  // no raw control byte may reach the message
  std::function<ParseOptions()> options = test::defaultOptions;
};

void PrintTo(const Refusal& r, std::ostream* os) {
  *os << r.name;
}

std::vector<Refusal> refusals() {
  return {
      {.name = "UnknownTopLevelKey",
       .text = "nodes = \"laptop\"\n",
       .errors = {{"decl.toml:1:1", {"unknown key 'nodes'", "allowed keys: node, module"}}}},
      {.name = "UnknownKindInModule",
       .text = "[module.m.fiel.x]\npath = \"/x\"\n",
       .errors = {{"decl.toml:1:11", {"unknown key 'fiel' in module m", "file, directory, link"}}}},
      {.name = "UnknownResourceKey",
       .text = "[module.node-tools.file.config]\npath = \"/x\"\ncontnet = \"x\"\n",
       .errors = {{"decl.toml:3:1",
                   {"unknown key 'contnet' in file node-tools.config; allowed keys: path, content, "
                    "blob, mode, owner, group, requires, on-remove"}}}},
      // "contnet" is unknown; that content is then missing follows from it.
      {.name = "MisspeltRequiredKeyIsReportedOnce",
       .text = "[module.m.file.x]\npath = \"/x\"\ncontnet = \"x\"\n",
       .errors = {{"decl.toml:3:1", {"unknown key 'contnet'"}}},
       .lines = 1},
      {.name = "WrongType",
       .text = "[module.m.file.x]\npath = 42\ncontent = \"\"\n",
       .errors = {{"decl.toml:2:8", {"'path' in file m.x must be a string, not an integer"}}}},
      {.name = "ModuleThatIsNotATable",
       .text = "module = 3\n",
       .errors = {{"decl.toml:1:10", {"'module' must be a table"}}}},
      {.name = "ResourceThatIsNotATable",
       .text = "[module.m.file]\nx = \"/x\"\n",
       .errors = {{"decl.toml:2:5", {"file m.x must be a table, not a string"}}}},
      {.name = "BadNames",
       .text = "[module.\"a b\".file.x]\npath = \"/x\"\n[module.m.file.\"x.y\"]\n",
       .errors = {{"decl.toml:1:9", {"invalid module name 'a b'"}},
                  {"decl.toml:3:16", {"invalid resource name 'x.y' in module m"}}}},
      {.name = "RelativePath",
       .text = "[module.m.file.x]\npath = \"etc/x\"\ncontent = \"\"\n",
       .errors = {{"decl.toml:2:8", {"path 'etc/x' in file m.x is not absolute"}}}},
      {.name = "PathWithDotDot",
       .text = "[module.m.directory.x]\npath = \"/etc/../x\"\n",
       .errors = {{"decl.toml:2:8", {"path '/etc/../x'", "'..' component"}}}},
      {.name = "PathsThatAreNotNormal",
       .text = R"([module.m.directory.a]
path = "/etc//x"
[module.m.directory.b]
path = "/etc/x/"
[module.m.directory.c]
path = "/"
[module.m.directory.d]
path = "/a/./b"
[module.m.directory.e]
path = "/a\u0000b"
)",
       .errors = {{"decl.toml:2:8", {"empty component"}},
                  {"decl.toml:4:8", {"trailing slash"}},
                  {"decl.toml:6:8", {"root directory"}},
                  {"decl.toml:8:8", {"'.' component"}},
                  {"decl.toml:10:8",
                   {"path '/a\\x00b' in directory m.e contains a control character (\\x00 at byte "
                    "3); remove it"}}}},
      // Five lines: a raw line break would add a line. The last: the control
      // character is reported before anything else, the first thing to fix.
      {.name = "PathWithControlCharacters",
       .text = R"([module.m.file.nl]
path = "/etc/a\nb"
content = ""
[module.m.file.esc]
path = "/etc/\u001b[31mred"
content = ""
[module.m.file.del]
path = "/etc/x\u007f"
content = ""
[module.m.directory.tab]
path = "/etc/a\tb"
[module.m.directory.cr]
path = "relative\r"
)",
       .errors =
           {{"decl.toml:2:8",
             {"path '/etc/a\\nb' in file m.nl contains a control character (\\n at byte 7); "
              "remove it"}},
            {"decl.toml:5:8",
             {"path '/etc/\\x1b[31mred' in file m.esc contains a control character (\\x1b at "
              "byte 6); remove it"}},
            {"decl.toml:8:8",
             {"path '/etc/x\\x7f' in file m.del contains a control character (\\x7f at byte "
              "7); remove it"}},
            {"decl.toml:11:8",
             {"path '/etc/a\\tb' in directory m.tab contains a control character (\\t at byte "
              "7); remove it"}},
            {"decl.toml:13:8",
             {"path 'relative\\r' in directory m.cr contains a control character (\\r at "
              "byte 9); remove it"}}},
       .lines = 5,
       .noRawControl = true},
      {.name = "LinkTargetAndCredentialFromWithControlCharacters",
       .text = R"([module.m.link.l]
path = "/opt/l"
target = "/opt/\u001b"
[module.m.credential.k]
path = "/etc/k"
from = "k\u0007.secret"
[module.m.link.n]
path = "/opt/n"
target = "a\nb"
)",
       .errors = {{"decl.toml:3:10",
                   {"target '/opt/\\x1b' in link m.l contains a control character (\\x1b at byte "
                    "6); remove it"}},
                  {"decl.toml:6:8",
                   {"from 'k\\x07.secret' in credential m.k contains a control character (\\x07 at "
                    "byte 2); remove it"}},
                  {"decl.toml:9:10",
                   {"target 'a\\nb' in link m.n contains a control character (\\n at byte 2)"}}},
       .lines = 3,
       .noRawControl = true},
      // 199 ASCII bytes, then a 2-byte character across the 200-byte cut.
      {.name = "LongValuesAreCutBetweenCharacters",
       .text = "[module.m.directory.d]\npath = \"" + std::string(199, 'a') + "\u00e9\"\n",
       .errors = {{"decl.toml:2:8",
                   {"path '" + std::string(199, 'a') + "…' in directory m.d is not absolute"}}}},
      {.name = "MissingPath",
       .text = "[module.m.directory.x]\nmode = \"0755\"\n",
       .errors = {{"decl.toml:1:1", {"directory m.x has no 'path'"}}}},
      {.name = "DuplicateIdIsATomlRedefinition",
       .text = "[module.m.file.x]\npath = \"/x\"\ncontent = \"\"\n\n[module.m.file.x]\n",
       .errors = {{"decl.toml:5:1",
                   {"cannot redefine existing table 'module.m.file.x'", "declared only once"}}},
       .lines = 1},
      {.name = "DuplicateIdAcrossKinds",
       .text = "[module.m.file.x]\npath = \"/x\"\ncontent = \"\"\n"
               "[module.m.directory.x]\npath = \"/y\"\n",
       .errors = {{"decl.toml:4:1", {"duplicate id 'm.x'", "file m.x at decl.toml:1:1"}}}},
      {.name = "DuplicatePath",
       .text = "[module.m.file.x]\npath = \"/x\"\ncontent = \"\"\n"
               "[module.n.directory.y]\npath = \"/x\"\n",
       .errors = {{"decl.toml:5:8",
                   {"duplicate path '/x'", "directory n.y", "file m.x (at decl.toml:2:8)"}}}},
      {.name = "UnknownIdInRequires",
       .text = R"([module.m.file.a]
path = "/a"
content = ""
[module.m.file.b]
path = "/b"
content = ""
requires = ["m.a", "m.c"]
)",
       .errors = {{"decl.toml:7:20",
                   {"unknown id 'm.c' in requires of file m.b",
                    "declared ids in module m: m.a, m.b"}}}},
      {.name = "UnknownIdHints",
       .text = R"([module.m.file.a]
path = "/a"
content = ""
requires = ["b", "q.a"]
[module.m.file.b]
path = "/b"
content = ""
)",
       .errors = {{"decl.toml:4:13", {"unknown id 'b'", "did you mean 'm.b'?"}},
                  {"decl.toml:4:18", {"unknown id 'q.a'", "no module 'q' is declared"}}}},
      {.name = "UnknownIdInRestartOn",
       .text = "[module.m.process.p]\nbundle = \"" + kDigestA +
               "\"\nunit = { ExecStart = \"x\" }\nrestart-on = [\"m.nope\"]\n",
       .errors = {{"decl.toml:4:15", {"unknown id 'm.nope' in restart-on of process m.p"}}}},
      {.name = "UnknownIdInReloadOn",
       .text = "[module.m.process.p]\nbundle = \"" + kDigestA +
               "\"\nunit = { ExecStart = \"x\" }\nreload-on = [\"m.nope\"]\n",
       .errors = {{"decl.toml:4:14", {"unknown id 'm.nope' in reload-on of process m.p"}}}},
      {.name = "ACauseInBothRestartOnAndReloadOn",
       .text = "[module.m.file.conf]\npath = \"/c\"\ncontent = \"\"\n"
               "[module.m.process.p]\nbundle = \"" +
               kDigestA +
               "\"\nunit = { ExecStart = \"x\" }\nrestart-on = [\"m.conf\"]\nreload-on = "
               "[\"m.conf\"]\n",
       .errors =
           {{"decl.toml:8:14",
             {"process m.p lists 'm.conf' in both restart-on and reload-on; keep it in one"}}},
       .lines = 1},
      {.name = "ReloadOnOnlyForProcesses",
       .text = "[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\n"
               "[module.m.directory.b]\npath = \"/b\"\nreload-on = [\"m.a\"]\n",
       .errors = {{"decl.toml:6:1", {"'reload-on' is only for processes, not directory m.b"}}},
       .lines = 1},
      {.name = "RequiresItself",
       .text = "[module.m.directory.a]\npath = \"/a\"\nrequires = [\"m.a\"]\n",
       .errors = {{"decl.toml:3:13", {"directory m.a lists itself in requires"}}}},
      {.name = "RequiresMustBeAnArrayOfStrings",
       .text = "[module.m.directory.a]\npath = \"/a\"\nrequires = \"m.b\"\n"
               "[module.m.directory.b]\npath = \"/b\"\nrequires = [1]\n",
       .errors = {{"decl.toml:3:12", {"'requires' in directory m.a must be an array of ids"}},
                  {"decl.toml:6:13", {"'requires' in directory m.b lists an integer"}}}},
      {.name = "RestartOnOnlyForProcesses",
       .text = "[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\n"
               "[module.m.file.b]\npath = \"/b\"\ncontent = \"\"\nrestart-on = [\"m.a\"]\n",
       .errors = {{"decl.toml:7:1", {"'restart-on' is only for processes, not file m.b"}}},
       .lines = 1},
      {.name = "ModeWrittenAsDecimal",
       .text = "[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nmode = 644\n",
       .errors = {{"decl.toml:4:8", {"mode 644", "decimal", "write it as \"0644\" or 0o644"}}}},
      {.name = "ModeWithNonOctalDigits",
       .text = "[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nmode = \"9999\"\n"
               "[module.m.file.b]\npath = \"/b\"\ncontent = \"\"\nmode = \"abc\"\n"
               "[module.m.file.c]\npath = \"/c\"\ncontent = \"\"\nmode = \"06440\"\n",
       .errors = {{"decl.toml:4:8", {"mode \"9999\" in file m.a is not an octal mode"}},
                  {"decl.toml:8:8", {"mode \"abc\" in file m.b is not an octal mode"}},
                  {"decl.toml:12:8", {"mode \"06440\" in file m.c is not an octal mode"}}}},
      {.name = "ModeOutOfRange",
       .text = "[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nmode = 0o17777\n",
       .errors = {{"decl.toml:4:8", {"mode 0o17777", "out of range", "0o7777"}}}},
      {.name = "ModeInHexOrOfWrongType",
       .text = "[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nmode = 0x1a4\n"
               "[module.m.file.b]\npath = \"/b\"\ncontent = \"\"\nmode = true\n",
       .errors = {{"decl.toml:4:8", {"not written in octal"}},
                  {"decl.toml:8:8", {"'mode' in file m.b must be a string of octal digits"}}}},
      {.name = "BadOwnerSyntax",
       .text = "[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nowner = \"Root User\"\n"
               "group = \"1x\"\n",
       .errors = {{"decl.toml:4:9", {"owner 'Root User' in file m.a is not a valid user name"}},
                  {"decl.toml:5:9", {"group '1x' in file m.a is not a valid group name"}}}},
      {.name = "OwnerTooLongOrOutOfRange",
       .text = "[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nowner = \"" +
               std::string(33, 'a') + "\"\ngroup = \"4294967295\"\n",
       .errors = {{"decl.toml:4:9", {"not a valid user name", "at most 32"}},
                  {"decl.toml:5:9", {"group '4294967295'", "out of range"}}}},
      {.name = "UnknownUserViaCallback",
       .text = "[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nowner = \"x\"\n",
       .errors = {{"decl.toml:4:9", {"no user 'x' on this node", "owner of file m.a"}}},
       .options =
           [] {
             auto options = test::defaultOptions();
             options.userExists = [](const std::string&) { return false; };
             return options;
           }},
      {.name = "BadDigest",
       .text = "[module.m.file.a]\npath = \"/a\"\nblob = \"sha256:ABC\"\n"
               "[module.m.archive.b]\npath = \"/b\"\nbundle = \"md5:00\"\n",
       .errors = {{"decl.toml:3:8",
                   {"blob 'sha256:ABC' in file m.a is not a valid digest",
                    "sha256:<64 lowercase hex digits>"}},
                  {"decl.toml:6:10", {"bundle 'md5:00' in archive m.b is not a valid digest"}}}},
      {.name = "NodeMismatch",
       .text = "node = \"server\"\n",
       .errors = {{"decl.toml:1:8",
                   {"declaration is for node 'server' but this is node 'laptop' (--node)"}}}},
      {.name = "ContentAndBlobBoth",
       .text = "[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nblob = \"" + kDigestA + "\"\n",
       .errors = {{"decl.toml:1:1", {"file m.a has both 'content' and 'blob'; keep exactly one"}}}},
      {.name = "ContentAndBlobNeither",
       .text = "[module.m.file.a]\npath = \"/a\"\n",
       .errors = {{"decl.toml:1:1", {"file m.a has neither 'content' nor 'blob'"}}}},
      {.name = "CredentialFromAndSealedBoth",
       .text = "[module.m.credential.k]\npath = \"/k\"\nfrom = \"k\"\nsealed = \"s\"\n",
       .errors = {{"decl.toml:1:1", {"credential m.k has both 'from' and 'sealed'"}}}},
      {.name = "CredentialFromAndSealedNeither",
       .text = "[module.m.credential.k]\npath = \"/k\"\n",
       .errors = {{"decl.toml:1:1", {"credential m.k has neither 'from' nor 'sealed'"}}}},
      {.name = "LinkNeedsNonEmptyTarget",
       .text = "[module.m.link.a]\npath = \"/a\"\n[module.m.link.b]\npath = \"/b\"\n"
               "target = \"\"\n",
       .errors = {{"decl.toml:1:1", {"link m.a has no 'target'"}},
                  {"decl.toml:5:10", {"'target' in link m.b is empty"}}}},
      {.name = "ArchiveLimitsMustBePositive",
       .text = "[module.m.archive.a]\npath = \"/a\"\nbundle = \"" + kDigestA +
               "\"\nmax-entries = 0\nmax-bytes = \"1G\"\n",
       .errors = {{"decl.toml:4:15", {"max-entries in archive m.a is 0", "positive integer"}},
                  {"decl.toml:5:13", {"'max-bytes' in archive m.a must be a positive integer"}}}},
      {.name = "ArchiveReplaceAndKeepModesAreBooleans",
       .text = "[module.m.archive.a]\npath = \"/a\"\nbundle = \"" + kDigestA +
               "\"\nreplace = \"yes\"\nkeep-modes = 1\n",
       .errors =
           {{"decl.toml:4:11",
             {"'replace' in archive m.a must be a boolean (true or false), not a string"}},
            {"decl.toml:5:14",
             {"'keep-modes' in archive m.a must be a boolean (true or false), not an integer"}}},
       .lines = 2},
      {.name = "UnknownArchiveKeyListsTheAllowedOnes",
       .text =
           "[module.m.archive.a]\npath = \"/a\"\nbundle = \"" + kDigestA + "\"\nkeep-mode = true\n",
       .errors =
           {{"decl.toml:4:1",
             {"unknown key 'keep-mode' in archive m.a; allowed keys: path, bundle, max-entries, "
              "max-bytes, replace, keep-modes, requires, on-remove"}}}},
      {.name = "DuplicateServiceName",
       .text = "[module.m.process.a]\nbundle = \"" + kDigestA +
               "\"\nunit = { ExecStart = \"x\" }\n"
               "[module.m.process.b]\nbundle = \"" +
               kDigestA + "\"\nunit = { ExecStart = \"y\" }\n",
       .errors = {{"decl.toml:4:1",
                   {"duplicate service 'm.service'",
                    "process m.b and process m.a (at decl.toml:1:1)"}}}},
      {.name = "BadServiceName",
       .text = "[module.m.process.a]\nbundle = \"" + kDigestA +
               "\"\nunit = { ExecStart = \"x\" }\nservice = \"m a.service\"\n"
               "[module.m.process.b]\nbundle = \"" +
               kDigestA + "\"\nunit = { ExecStart = \"x\" }\nservice = \"m-b\"\n",
       .errors = {{"decl.toml:4:11", {"service 'm a.service' in process m.a is not a valid"}},
                  {"decl.toml:8:11", {"service 'm-b'", "ending in \".service\""}}}},
      {.name = "ProcessUnitProblems",
       .text = R"([module.m.process.a]
bundle = ")" + kDigestA +
               R"("
unit = { Restart = "always", "Exec-Start" = "x", Nice = 5, Environment = ["A=1", 2] }
[module.m.process.b]
unit = "ExecStart=x"
service = "b.service"
[module.m.process.c]
bundle = ")" + kDigestA +
               R"("
service = "c.service"
unit = { ExecStart = "a\nb" }
)",
       .errors = {{"decl.toml:3:8", {"unit of process m.a has no ExecStart"}},
                  {"decl.toml:3:30", {"unit key 'Exec-Start'"}},
                  {"decl.toml:3:57", {"unit.Nice in process m.a must be a string or an array"}},
                  {"decl.toml:3:82", {"unit.Environment in process m.a lists an integer"}},
                  {"decl.toml:4:1", {"process m.b has no 'bundle'"}},
                  {"decl.toml:5:8", {"'unit' in process m.b must be a table"}},
                  {"decl.toml:10:22", {"unit.ExecStart in process m.c contains a line break"}}}},
      // Unit keys are checked at parse: a typo, or a value systemd would only warn
      // about in its journal, is bad input with its position (both backends).
      // Four lines: Type and TimeoutStartSec are fine.
      {.name = "UnknownOrInvalidUnitKeys",
       .text = R"([module.m.process.a]
bundle = ")" + kDigestA +
               R"("
unit = { ExecStart = "x", Restrat = "always" }
[module.m.process.b]
bundle = ")" + kDigestA +
               R"("
service = "b.service"
unit = { ExecStart = "x", Restart = "sometimes", RestartSec = "5 parsecs" }
[module.m.process.c]
bundle = ")" + kDigestA +
               R"("
service = "c.service"
unit = { ExecStart = "x", PrivateTmp = "maybe", Type = "notify", TimeoutStartSec = "1min 30s" }
)",
       .errors =
           {{"decl.toml:3:37",
             {"unknown unit key 'Restrat' in process m.a; did you mean 'Restart'?"}},
            {"decl.toml:7:37",
             {"unit.Restart = 'sometimes' in process m.b is not one of: no, on-success", "always"}},
            {"decl.toml:7:63", {"unit.RestartSec = '5 parsecs' in process m.b is not a"}},
            {"decl.toml:11:40", {"unit.PrivateTmp = 'maybe' in process m.c is not a boolean"}}},
       .lines = 4},
      {.name = "TomlSyntaxError",
       .text = "[module.m.file.a]\npath = \"/a\ncontent = \"\"\n",
       .errors = {{"decl.toml:2:11", {"fix the TOML syntax"}}},
       .lines = 1},
  };
}

class Refused : public ::testing::TestWithParam<Refusal> {};

TEST_P(Refused, NamesPlaceAndFault) {
  const Refusal& r = GetParam();
  auto msg = errorOf(r.text, r.options());
  for (const auto& e : r.errors) expectError(msg, e.where, e.words);
  if (r.lines != 0) {
    EXPECT_EQ(lineCount(msg), r.lines) << msg;
  }
  if (r.noRawControl) expectNoRawControl(msg);
}

INSTANTIATE_TEST_SUITE_P(ParseError, Refused, ::testing::ValuesIn(refusals()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ParseError, EveryControlByteIsRefusedAndEscaped) {
  for (int byte = 1; byte <= 0x7f; byte = byte == 0x1f ? 0x7f : byte + 1) {
    auto msg = errorOf(fmt::format("[module.m.directory.d]\npath = \"/a\\u{:04x}b\"\n", byte));
    std::string escaped = byte == '\n'   ? "\\n"
                          : byte == '\t' ? "\\t"
                          : byte == '\r' ? "\\r"
                                         : fmt::format("\\x{:02x}", byte);
    EXPECT_EQ(msg, fmt::format("decl.toml:2:8: error: path '/a{}b' in directory m.d contains a "
                               "control character ({} at byte 3); remove it",
                               escaped, escaped))
        << byte;
  }
}

TEST(ParseError, RawControlBytesInTomlSyntaxErrorsAreEscaped) {
  // Not TOML escapes but the raw bytes themselves: TOML forbids them, and the
  // syntax error must not carry them to the terminal either.
  for (std::string text : {"[module.m.file.x]\npath = \"/etc/\x1b]0;t\x07\"\n", "# \x1b[2J\n",
                           "\x1bx = 1\n", "node = \"a\x7f\"\n"}) {
    auto msg = errorOf(text);
    EXPECT_NE(msg.find("fix the TOML syntax"), std::string::npos) << msg;
    expectNoRawControl(msg);
  }
}

TEST(ParseError, NumericOwnerSkipsTheCallback) {
  auto options = test::defaultOptions();
  options.userExists = [](const std::string&) -> bool { throw std::logic_error("called"); };
  EXPECT_NO_THROW(
      test::parse("[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nowner = \"0\"\n", options));
}

TEST(UnitKeys, TimeSpansAsSystemdWritesThem) {
  for (const char* ok : {"90", "1min 30s", "500ms", "infinity", "2h", "1.5s", " 5 s ", "1d2h"})
    EXPECT_TRUE(validTimeSpan(ok)) << ok;
  for (const char* bad : {"", "soon", "5 parsecs", "-1s", "s", "1 2 x"})
    EXPECT_FALSE(validTimeSpan(bad)) << bad;
}

TEST(ParseError, AllErrorsAreReportedInOrder) {
  auto msg = errorOf(R"(bogus = 1
[module.m.file.a]
path = "a"
content = ""
mode = 644
[module.m.directory.b]
path = "/b"
requires = ["m.zzz"]
colour = "red"
)");
  EXPECT_EQ(lineCount(msg), 5u) << msg;
  auto at = [&](const std::string& where) { return msg.find(where + ": error: "); };
  EXPECT_LT(at("decl.toml:1:1"), at("decl.toml:3:8"));
  EXPECT_LT(at("decl.toml:3:8"), at("decl.toml:5:8"));
  EXPECT_LT(at("decl.toml:5:8"), at("decl.toml:8:13"));
  EXPECT_LT(at("decl.toml:8:13"), at("decl.toml:9:1"));
  EXPECT_NE(at("decl.toml:9:1"), std::string::npos);
}

// An emptied file is not "remove everything": a declaration without resources
// is refused unless it says `empty = true`.
TEST(ParseError, EmptyDeclarationIsRefused) {
  const std::string expected =
      "decl.toml: error: declaration decl.toml declares no resources; an empty declaration "
      "would remove everything mesh-host manages on this node: write `empty = true` if that is "
      "what you want";
  for (const char* text : {"", "\n\n", "# all commented out\n# [module.m.file.a]\n",
                           "node = \"laptop\"\n", "serial = 4\n", "node = \"laptop\"\nserial = 4\n",
                           "empty = false\n", "[module]\n", "[module.m]\n", "[module.m.file]\n"})
    EXPECT_EQ(errorOf(text), expected) << "for: " << text;
}

TEST(ParseError, EmptyTrueWithResourcesIsRefused) {
  auto msg = errorOf(
      "node = \"laptop\"\nempty = true\n\n[module.m.file.a]\npath = \"/a\"\n"
      "content = \"\"\n");
  EXPECT_EQ(msg,
            "decl.toml:2:9: error: empty = true but 1 resource is declared; remove `empty = true` "
            "to apply it, or remove the resource");
  msg = errorOf(
      "empty = true\n[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\n"
      "[module.m.file.b]\npath = \"/b\"\ncontent = \"\"\n");
  EXPECT_NE(msg.find("decl.toml:1:9: error: empty = true but 2 resources are declared"),
            std::string::npos)
      << msg;
}

TEST(ParseError, EmptyMustBeABoolean) {
  auto msg = errorOf("empty = \"yes\"\n");
  EXPECT_NE(msg.find("decl.toml:1:9: error:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("boolean"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("declares no resources"), std::string::npos) << "one error is enough: " << msg;
}

// Other errors say what went wrong; "no resources" would only add noise.
TEST(ParseError, EmptyIsNotReportedBesideOtherErrors) {
  auto msg = errorOf("[modules.m.file.a]\npath = \"/a\"\ncontent = \"\"\n");
  EXPECT_NE(msg.find("unknown key 'modules'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("declares no resources"), std::string::npos) << msg;
}

// Issue 27: nesting is counted before toml++ recurses over it. At the limit a
// declaration still parses (strings holding brackets, dots and quotes do not count);
// one level past it is refused at the place it passes the limit.
TEST(ParseDepth, NestingPastTheLimitIsRefusedWhereItPassesIt) {
  EXPECT_EQ(tooDeep(R"([module.m.file.f]
path = "/etc/a.b.c[{"
content = """ [[[[ {{{{ a.b.c.d.e.f.g """
x = [[1, 2], {a.b = 'q.r[s'}]  # [[[[ comment
)",
                    10),
            std::nullopt);
  std::string dotted = "a";
  for (int k = 1; k < kMaxNesting; ++k) dotted += ".a";
  EXPECT_EQ(tooDeep(dotted + " = 1\n"), std::nullopt);
  const auto deep = tooDeep("\n" + dotted + ".b = 1\n");
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->line, 2);
  EXPECT_EQ(deep->column, 2 * kMaxNesting + 1);  // the 'b'
  EXPECT_EQ(deep->depth, kMaxNesting + 1);
  // A header's segments count beneath the keys below it; inline tables and arrays on top.
  EXPECT_TRUE(tooDeep("[" + dotted + "]\nb = 1\n"));
  EXPECT_TRUE(tooDeep("[a.b]\nc = " + std::string(kMaxNesting, '[')));
  EXPECT_FALSE(tooDeep("[a.b]\nc = " + std::string(kMaxNesting - 3, '[')));

  std::string header = "[a";
  for (int k = 0; k < 50000; ++k) header += ".a";
  const std::string message = errorOf(header + "]\n");
  EXPECT_NE(message.find("decl.toml:1:130: error: keys, tables and values nest 65 levels deep "
                         "here; at most 64 are allowed"),
            std::string::npos)
      << message.substr(0, 300);
}

// toml++ 3.3.0 reaches undefined behaviour (TOML_UNREACHABLE) on any character from
// U+00A1 to U+0499 outside a string or comment, where TOML 1.0 allows only ASCII: a
// key `café`, a header `[module.ґ]`, a value `1é` (found by the decl fuzzer; UBSan
// reports it on the old code). It is refused before toml++ sees it, at its place and by
// its code point; in strings and comments the same characters are fine.
TEST(ParseNotAscii, OutsideStringsItIsRefusedByCodePointBeforeTomlSeesIt) {
  struct Case {
    std::string text, where, what;
  };
  const std::vector<Case> cases = {
      {"caf\xc3\xa9 = 1\n", "decl.toml:1:4", "U+00E9"},
      {"[module.m.file.\xd2\x91"
       "a]\npath = \"/a\"\n",
       "decl.toml:1:16", "U+0491"},
      {"[module.m.file.a]\npath = \"/a\"\nmode = 6\xc2\xa1\n", "decl.toml:3:9", "U+00A1"},
      {"x = [1, \xd2\x99]\n", "decl.toml:1:9", "U+0499"},
      {"x = { b\xc3\xa9 = 1 }  # \xc3\xa9\n", "decl.toml:1:8", "U+00E9"},
      {"x = '''\xc3\xa9\n\xc3\xa9'''\ny\xe2\x80\xae = 2\n", "decl.toml:3:2", "U+202E"},
      {"x = \"\\\"\xc3\xa9\"\n[a]\xd7\n", "decl.toml:2:4", "byte \\xd7 (not UTF-8)"},
  };
  for (const auto& c : cases) {
    const std::string msg = errorOf(c.text);
    EXPECT_EQ(msg, c.where + ": error: " + c.what +
                       " outside a quoted string: TOML allows only ASCII in keys, table headers "
                       "and bare values (quote the key, as in \"name\" = ..., or the value)")
        << c.where;
  }
  // In strings and comments: parsed as ever (and quoted keys are strings).
  const std::string fine =
      "# caf\xc3\xa9 \xd2\x91\n[module.m.file.a]  # \xc2\xa1\npath = \"/caf\xc3\xa9\"\n"
      "content = '''\n\xd2\x99\n'''\n";
  EXPECT_EQ(notAsciiOutsideStrings(fine), std::nullopt);
  EXPECT_EQ(notAsciiOutsideStrings("[a.\"\xd2\x91\"]\n'\xc3\xa9' = 1\n"), std::nullopt);
  EXPECT_NO_THROW(test::parse(fine)) << errorOf(fine);
}

}  // namespace
}  // namespace mesh::decl
