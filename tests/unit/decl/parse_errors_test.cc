// Declarations that must be refused: one test per kind of mistake, each
// checking that the message names the place (file:line:column) and the fault.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "decl/unit_keys.hh"
#include "decl_test.hh"

namespace mesh::decl {
namespace {

using test::errorOf;
using test::kDigestA;

// Expects `message` to hold `where` ("decl.toml:3:1") as an error line's start
// and every one of `words`.
void expectError(const std::string& message, const std::string& where,
                 std::initializer_list<std::string> words) {
  EXPECT_NE(message.find(where + ": error: "), std::string::npos)
      << "no error at " << where << " in:\n"
      << message;
  for (const auto& w : words) EXPECT_NE(message.find(w), std::string::npos) << w << "\n" << message;
}

size_t lineCount(const std::string& message) {
  return message.empty() ? 0 : 1 + std::count(message.begin(), message.end(), '\n');
}

TEST(ParseError, UnknownTopLevelKey) {
  auto msg = errorOf("nodes = \"laptop\"\n");
  expectError(msg, "decl.toml:1:1", {"unknown key 'nodes'", "allowed keys: node, module"});
}

TEST(ParseError, UnknownKindInModule) {
  auto msg = errorOf("[module.m.fiel.x]\npath = \"/x\"\n");
  expectError(msg, "decl.toml:1:11", {"unknown key 'fiel' in module m", "file, directory, link"});
}

TEST(ParseError, UnknownResourceKey) {
  auto msg = errorOf("[module.node-tools.file.config]\npath = \"/x\"\ncontnet = \"x\"\n");
  expectError(msg, "decl.toml:3:1",
              {"unknown key 'contnet' in file node-tools.config; allowed keys: path, content, "
               "blob, mode, owner, group, requires"});
}

TEST(ParseError, MisspeltRequiredKeyIsReportedOnce) {
  // "contnet" is unknown; that content is then missing follows from it.
  auto msg = errorOf("[module.m.file.x]\npath = \"/x\"\ncontnet = \"x\"\n");
  EXPECT_EQ(lineCount(msg), 1u) << msg;
  expectError(msg, "decl.toml:3:1", {"unknown key 'contnet'"});
}

TEST(ParseError, WrongType) {
  auto msg = errorOf("[module.m.file.x]\npath = 42\ncontent = \"\"\n");
  expectError(msg, "decl.toml:2:8", {"'path' in file m.x must be a string, not an integer"});
}

TEST(ParseError, ModuleThatIsNotATable) {
  auto msg = errorOf("module = 3\n");
  expectError(msg, "decl.toml:1:10", {"'module' must be a table"});
}

TEST(ParseError, ResourceThatIsNotATable) {
  auto msg = errorOf("[module.m.file]\nx = \"/x\"\n");
  expectError(msg, "decl.toml:2:5", {"file m.x must be a table, not a string"});
}

TEST(ParseError, BadNames) {
  auto msg = errorOf("[module.\"a b\".file.x]\npath = \"/x\"\n[module.m.file.\"x.y\"]\n");
  expectError(msg, "decl.toml:1:9", {"invalid module name 'a b'"});
  expectError(msg, "decl.toml:3:16", {"invalid resource name 'x.y' in module m"});
}

TEST(ParseError, RelativePath) {
  auto msg = errorOf("[module.m.file.x]\npath = \"etc/x\"\ncontent = \"\"\n");
  expectError(msg, "decl.toml:2:8", {"path 'etc/x' in file m.x is not absolute"});
}

TEST(ParseError, PathWithDotDot) {
  auto msg = errorOf("[module.m.directory.x]\npath = \"/etc/../x\"\n");
  expectError(msg, "decl.toml:2:8", {"path '/etc/../x'", "'..' component"});
}

TEST(ParseError, PathsThatAreNotNormal) {
  auto msg = errorOf(R"([module.m.directory.a]
path = "/etc//x"
[module.m.directory.b]
path = "/etc/x/"
[module.m.directory.c]
path = "/"
[module.m.directory.d]
path = "/a/./b"
[module.m.directory.e]
path = "/a\u0000b"
)");
  expectError(msg, "decl.toml:2:8", {"empty component"});
  expectError(msg, "decl.toml:4:8", {"trailing slash"});
  expectError(msg, "decl.toml:6:8", {"root directory"});
  expectError(msg, "decl.toml:8:8", {"'.' component"});
  expectError(msg, "decl.toml:10:8",
              {"path '/a\\x00b' in directory m.e contains a control character (\\x00 at byte "
               "3); remove it"});
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

TEST(ParseError, PathWithControlCharacters) {
  auto msg = errorOf(R"([module.m.file.nl]
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
)");
  EXPECT_EQ(lineCount(msg), 5u) << msg;  // a raw line break would add a line
  expectError(msg, "decl.toml:2:8",
              {"path '/etc/a\\nb' in file m.nl contains a control character (\\n at byte 7); "
               "remove it"});
  expectError(msg, "decl.toml:5:8",
              {"path '/etc/\\x1b[31mred' in file m.esc contains a control character (\\x1b at "
               "byte 6); remove it"});
  expectError(msg, "decl.toml:8:8",
              {"path '/etc/x\\x7f' in file m.del contains a control character (\\x7f at byte "
               "7); remove it"});
  expectError(msg, "decl.toml:11:8",
              {"path '/etc/a\\tb' in directory m.tab contains a control character (\\t at byte "
               "7); remove it"});
  // Before anything else: the control character is the first thing to fix.
  expectError(msg, "decl.toml:13:8",
              {"path 'relative\\r' in directory m.cr contains a control character (\\r at "
               "byte 9); remove it"});
  expectNoRawControl(msg);
}

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

TEST(ParseError, LinkTargetAndCredentialFromWithControlCharacters) {
  auto msg = errorOf(R"([module.m.link.l]
path = "/opt/l"
target = "/opt/\u001b"
[module.m.credential.k]
path = "/etc/k"
from = "k\u0007.secret"
[module.m.link.n]
path = "/opt/n"
target = "a\nb"
)");
  EXPECT_EQ(lineCount(msg), 3u) << msg;
  expectError(msg, "decl.toml:3:10",
              {"target '/opt/\\x1b' in link m.l contains a control character (\\x1b at byte "
               "6); remove it"});
  expectError(msg, "decl.toml:6:8",
              {"from 'k\\x07.secret' in credential m.k contains a control character (\\x07 at "
               "byte 2); remove it"});
  expectError(msg, "decl.toml:9:10",
              {"target 'a\\nb' in link m.n contains a control character (\\n at byte 2)"});
  expectNoRawControl(msg);
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

TEST(ParseError, LongValuesAreCutBetweenCharacters) {
  // 199 ASCII bytes, then a 2-byte character across the 200-byte cut.
  std::string path = std::string(199, 'a') + "\u00e9";
  auto msg = errorOf("[module.m.directory.d]\npath = \"" + path + "\"\n");
  expectError(msg, "decl.toml:2:8",
              {"path '" + std::string(199, 'a') + "…' in directory m.d is not absolute"});
}

TEST(ParseError, MissingPath) {
  auto msg = errorOf("[module.m.directory.x]\nmode = \"0755\"\n");
  expectError(msg, "decl.toml:1:1", {"directory m.x has no 'path'"});
}

TEST(ParseError, DuplicateIdIsATomlRedefinition) {
  auto msg = errorOf("[module.m.file.x]\npath = \"/x\"\ncontent = \"\"\n\n[module.m.file.x]\n");
  expectError(msg, "decl.toml:5:1",
              {"cannot redefine existing table 'module.m.file.x'", "declared only once"});
  EXPECT_EQ(lineCount(msg), 1u);
}

TEST(ParseError, DuplicateIdAcrossKinds) {
  auto msg = errorOf(
      "[module.m.file.x]\npath = \"/x\"\ncontent = \"\"\n"
      "[module.m.directory.x]\npath = \"/y\"\n");
  expectError(msg, "decl.toml:4:1", {"duplicate id 'm.x'", "file m.x at decl.toml:1:1"});
}

TEST(ParseError, DuplicatePath) {
  auto msg = errorOf(
      "[module.m.file.x]\npath = \"/x\"\ncontent = \"\"\n"
      "[module.n.directory.y]\npath = \"/x\"\n");
  expectError(msg, "decl.toml:5:8",
              {"duplicate path '/x'", "directory n.y", "file m.x (at decl.toml:2:8)"});
}

TEST(ParseError, UnknownIdInRequires) {
  auto msg = errorOf(R"([module.m.file.a]
path = "/a"
content = ""
[module.m.file.b]
path = "/b"
content = ""
requires = ["m.a", "m.c"]
)");
  expectError(msg, "decl.toml:7:20",
              {"unknown id 'm.c' in requires of file m.b", "declared ids in module m: m.a, m.b"});
}

TEST(ParseError, UnknownIdHints) {
  auto msg = errorOf(R"([module.m.file.a]
path = "/a"
content = ""
requires = ["b", "q.a"]
[module.m.file.b]
path = "/b"
content = ""
)");
  expectError(msg, "decl.toml:4:13", {"unknown id 'b'", "did you mean 'm.b'?"});
  expectError(msg, "decl.toml:4:18", {"unknown id 'q.a'", "no module 'q' is declared"});
}

TEST(ParseError, UnknownIdInRestartOn) {
  auto msg = errorOf("[module.m.process.p]\nbundle = \"" + kDigestA +
                     "\"\nunit = { ExecStart = \"x\" }\nrestart-on = [\"m.nope\"]\n");
  expectError(msg, "decl.toml:4:15", {"unknown id 'm.nope' in restart-on of process m.p"});
}

TEST(ParseError, UnknownIdInReloadOn) {
  auto msg = errorOf("[module.m.process.p]\nbundle = \"" + kDigestA +
                     "\"\nunit = { ExecStart = \"x\" }\nreload-on = [\"m.nope\"]\n");
  expectError(msg, "decl.toml:4:14", {"unknown id 'm.nope' in reload-on of process m.p"});
}

TEST(ParseError, ACauseInBothRestartOnAndReloadOn) {
  auto msg = errorOf(
      "[module.m.file.conf]\npath = \"/c\"\ncontent = \"\"\n"
      "[module.m.process.p]\nbundle = \"" +
      kDigestA +
      "\"\nunit = { ExecStart = \"x\" }\nrestart-on = [\"m.conf\"]\nreload-on = [\"m.conf\"]\n");
  expectError(msg, "decl.toml:8:14",
              {"process m.p lists 'm.conf' in both restart-on and reload-on; keep it in one"});
  EXPECT_EQ(lineCount(msg), 1u) << msg;
}

TEST(ParseError, ReloadOnOnlyForProcesses) {
  auto msg = errorOf(
      "[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\n"
      "[module.m.directory.b]\npath = \"/b\"\nreload-on = [\"m.a\"]\n");
  expectError(msg, "decl.toml:6:1", {"'reload-on' is only for processes, not directory m.b"});
  EXPECT_EQ(lineCount(msg), 1u) << msg;
}

TEST(ParseError, RequiresItself) {
  auto msg = errorOf("[module.m.directory.a]\npath = \"/a\"\nrequires = [\"m.a\"]\n");
  expectError(msg, "decl.toml:3:13", {"directory m.a lists itself in requires"});
}

TEST(ParseError, RequiresMustBeAnArrayOfStrings) {
  auto msg = errorOf(
      "[module.m.directory.a]\npath = \"/a\"\nrequires = \"m.b\"\n"
      "[module.m.directory.b]\npath = \"/b\"\nrequires = [1]\n");
  expectError(msg, "decl.toml:3:12", {"'requires' in directory m.a must be an array of ids"});
  expectError(msg, "decl.toml:6:13", {"'requires' in directory m.b lists an integer"});
}

TEST(ParseError, RestartOnOnlyForProcesses) {
  auto msg = errorOf(
      "[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\n"
      "[module.m.file.b]\npath = \"/b\"\ncontent = \"\"\nrestart-on = [\"m.a\"]\n");
  expectError(msg, "decl.toml:7:1", {"'restart-on' is only for processes, not file m.b"});
  EXPECT_EQ(lineCount(msg), 1u) << msg;
}

TEST(ParseError, ModeWrittenAsDecimal) {
  auto msg = errorOf("[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nmode = 644\n");
  expectError(msg, "decl.toml:4:8", {"mode 644", "decimal", "write it as \"0644\" or 0o644"});
}

TEST(ParseError, ModeWithNonOctalDigits) {
  auto msg = errorOf(
      "[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nmode = \"9999\"\n"
      "[module.m.file.b]\npath = \"/b\"\ncontent = \"\"\nmode = \"abc\"\n"
      "[module.m.file.c]\npath = \"/c\"\ncontent = \"\"\nmode = \"06440\"\n");
  expectError(msg, "decl.toml:4:8", {"mode \"9999\" in file m.a is not an octal mode"});
  expectError(msg, "decl.toml:8:8", {"mode \"abc\" in file m.b is not an octal mode"});
  expectError(msg, "decl.toml:12:8", {"mode \"06440\" in file m.c is not an octal mode"});
}

TEST(ParseError, ModeOutOfRange) {
  auto msg = errorOf("[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nmode = 0o17777\n");
  expectError(msg, "decl.toml:4:8", {"mode 0o17777", "out of range", "0o7777"});
}

TEST(ParseError, ModeInHexOrOfWrongType) {
  auto msg = errorOf(
      "[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nmode = 0x1a4\n"
      "[module.m.file.b]\npath = \"/b\"\ncontent = \"\"\nmode = true\n");
  expectError(msg, "decl.toml:4:8", {"not written in octal"});
  expectError(msg, "decl.toml:8:8", {"'mode' in file m.b must be a string of octal digits"});
}

TEST(ParseError, BadOwnerSyntax) {
  auto msg = errorOf(
      "[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nowner = \"Root User\"\n"
      "group = \"1x\"\n");
  expectError(msg, "decl.toml:4:9", {"owner 'Root User' in file m.a is not a valid user name"});
  expectError(msg, "decl.toml:5:9", {"group '1x' in file m.a is not a valid group name"});
}

TEST(ParseError, OwnerTooLongOrOutOfRange) {
  auto msg = errorOf("[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nowner = \"" +
                     std::string(33, 'a') + "\"\ngroup = \"4294967295\"\n");
  expectError(msg, "decl.toml:4:9", {"not a valid user name", "at most 32"});
  expectError(msg, "decl.toml:5:9", {"group '4294967295'", "out of range"});
}

TEST(ParseError, UnknownUserViaCallback) {
  auto options = test::defaultOptions();
  options.userExists = [](const std::string&) { return false; };
  auto msg = errorOf("[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nowner = \"x\"\n", options);
  expectError(msg, "decl.toml:4:9", {"no user 'x' on this node", "owner of file m.a"});
}

TEST(ParseError, NumericOwnerSkipsTheCallback) {
  auto options = test::defaultOptions();
  options.userExists = [](const std::string&) -> bool { throw std::logic_error("called"); };
  EXPECT_NO_THROW(
      test::parse("[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nowner = \"0\"\n", options));
}

TEST(ParseError, BadDigest) {
  auto msg = errorOf(
      "[module.m.file.a]\npath = \"/a\"\nblob = \"sha256:ABC\"\n"
      "[module.m.archive.b]\npath = \"/b\"\nbundle = \"md5:00\"\n");
  expectError(
      msg, "decl.toml:3:8",
      {"blob 'sha256:ABC' in file m.a is not a valid digest", "sha256:<64 lowercase hex digits>"});
  expectError(msg, "decl.toml:6:10", {"bundle 'md5:00' in archive m.b is not a valid digest"});
}

TEST(ParseError, NodeMismatch) {
  auto msg = errorOf("node = \"server\"\n");
  expectError(msg, "decl.toml:1:8",
              {"declaration is for node 'server' but this is node 'laptop' (--node)"});
}

TEST(ParseError, ContentAndBlobBoth) {
  auto msg =
      errorOf("[module.m.file.a]\npath = \"/a\"\ncontent = \"\"\nblob = \"" + kDigestA + "\"\n");
  expectError(msg, "decl.toml:1:1", {"file m.a has both 'content' and 'blob'; keep exactly one"});
}

TEST(ParseError, ContentAndBlobNeither) {
  auto msg = errorOf("[module.m.file.a]\npath = \"/a\"\n");
  expectError(msg, "decl.toml:1:1", {"file m.a has neither 'content' nor 'blob'"});
}

TEST(ParseError, CredentialFromAndSealedBoth) {
  auto msg = errorOf("[module.m.credential.k]\npath = \"/k\"\nfrom = \"k\"\nsealed = \"s\"\n");
  expectError(msg, "decl.toml:1:1", {"credential m.k has both 'from' and 'sealed'"});
}

TEST(ParseError, CredentialFromAndSealedNeither) {
  auto msg = errorOf("[module.m.credential.k]\npath = \"/k\"\n");
  expectError(msg, "decl.toml:1:1", {"credential m.k has neither 'from' nor 'sealed'"});
}

TEST(ParseError, LinkNeedsNonEmptyTarget) {
  auto msg = errorOf(
      "[module.m.link.a]\npath = \"/a\"\n[module.m.link.b]\npath = \"/b\"\n"
      "target = \"\"\n");
  expectError(msg, "decl.toml:1:1", {"link m.a has no 'target'"});
  expectError(msg, "decl.toml:5:10", {"'target' in link m.b is empty"});
}

TEST(ParseError, ArchiveLimitsMustBePositive) {
  auto msg = errorOf("[module.m.archive.a]\npath = \"/a\"\nbundle = \"" + kDigestA +
                     "\"\nmax-entries = 0\nmax-bytes = \"1G\"\n");
  expectError(msg, "decl.toml:4:15", {"max-entries in archive m.a is 0", "positive integer"});
  expectError(msg, "decl.toml:5:13", {"'max-bytes' in archive m.a must be a positive integer"});
}

TEST(ParseError, ArchiveReplaceAndKeepModesAreBooleans) {
  auto msg = errorOf("[module.m.archive.a]\npath = \"/a\"\nbundle = \"" + kDigestA +
                     "\"\nreplace = \"yes\"\nkeep-modes = 1\n");
  EXPECT_EQ(lineCount(msg), 2u) << msg;
  expectError(msg, "decl.toml:4:11",
              {"'replace' in archive m.a must be a boolean (true or false), not a string"});
  expectError(msg, "decl.toml:5:14",
              {"'keep-modes' in archive m.a must be a boolean (true or false), not an integer"});
}

TEST(ParseError, UnknownArchiveKeyListsTheAllowedOnes) {
  auto msg = errorOf("[module.m.archive.a]\npath = \"/a\"\nbundle = \"" + kDigestA +
                     "\"\nkeep-mode = true\n");
  expectError(msg, "decl.toml:4:1",
              {"unknown key 'keep-mode' in archive m.a; allowed keys: path, bundle, max-entries, "
               "max-bytes, replace, keep-modes, requires"});
}

TEST(ParseError, DuplicateServiceName) {
  auto msg = errorOf("[module.m.process.a]\nbundle = \"" + kDigestA +
                     "\"\nunit = { ExecStart = \"x\" }\n"
                     "[module.m.process.b]\nbundle = \"" +
                     kDigestA + "\"\nunit = { ExecStart = \"y\" }\n");
  expectError(msg, "decl.toml:4:1",
              {"duplicate service 'm.service'", "process m.b and process m.a (at decl.toml:1:1)"});
}

TEST(ParseError, BadServiceName) {
  auto msg = errorOf("[module.m.process.a]\nbundle = \"" + kDigestA +
                     "\"\nunit = { ExecStart = \"x\" }\nservice = \"m a.service\"\n"
                     "[module.m.process.b]\nbundle = \"" +
                     kDigestA + "\"\nunit = { ExecStart = \"x\" }\nservice = \"m-b\"\n");
  expectError(msg, "decl.toml:4:11", {"service 'm a.service' in process m.a is not a valid"});
  expectError(msg, "decl.toml:8:11", {"service 'm-b'", "ending in \".service\""});
}

TEST(ParseError, ProcessUnitProblems) {
  auto msg = errorOf(R"([module.m.process.a]
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
)");
  expectError(msg, "decl.toml:3:8", {"unit of process m.a has no ExecStart"});
  expectError(msg, "decl.toml:3:30", {"unit key 'Exec-Start'"});
  expectError(msg, "decl.toml:3:57", {"unit.Nice in process m.a must be a string or an array"});
  expectError(msg, "decl.toml:3:82", {"unit.Environment in process m.a lists an integer"});
  expectError(msg, "decl.toml:4:1", {"process m.b has no 'bundle'"});
  expectError(msg, "decl.toml:5:8", {"'unit' in process m.b must be a table"});
  expectError(msg, "decl.toml:10:22", {"unit.ExecStart in process m.c contains a line break"});
}

// Unit keys are checked at parse: a typo, or a value systemd would only warn
// about in its journal, is bad input with its position (both backends).
TEST(ParseError, UnknownOrInvalidUnitKeys) {
  auto msg = errorOf(R"([module.m.process.a]
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
)");
  expectError(msg, "decl.toml:3:37",
              {"unknown unit key 'Restrat' in process m.a; did you mean 'Restart'?"});
  expectError(
      msg, "decl.toml:7:37",
      {"unit.Restart = 'sometimes' in process m.b is not one of: no, on-success", "always"});
  expectError(msg, "decl.toml:7:63", {"unit.RestartSec = '5 parsecs' in process m.b is not a"});
  expectError(msg, "decl.toml:11:40",
              {"unit.PrivateTmp = 'maybe' in process m.c is not a boolean"});
  EXPECT_EQ(lineCount(msg), 4u) << msg;  // Type and TimeoutStartSec are fine
}

TEST(UnitKeys, TimeSpansAsSystemdWritesThem) {
  for (const char* ok : {"90", "1min 30s", "500ms", "infinity", "2h", "1.5s", " 5 s ", "1d2h"})
    EXPECT_TRUE(validTimeSpan(ok)) << ok;
  for (const char* bad : {"", "soon", "5 parsecs", "-1s", "s", "1 2 x"})
    EXPECT_FALSE(validTimeSpan(bad)) << bad;
}

TEST(ParseError, TomlSyntaxError) {
  auto msg = errorOf("[module.m.file.a]\npath = \"/a\ncontent = \"\"\n");
  expectError(msg, "decl.toml:2:11", {"fix the TOML syntax"});
  EXPECT_EQ(lineCount(msg), 1u);
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

}  // namespace
}  // namespace mesh::decl
