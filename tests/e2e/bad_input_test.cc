// A broken declaration applies nothing: exit 2, a message that names the place,
// and the root byte-for-byte as it was.
#include <cctype>
#include <filesystem>

#include "every_kind.hh"

namespace mesh::e2e {
namespace {

struct BadCase {
  const char* name;
  std::string text;
  const char* where;     // "decl.toml:L:C" fragment the message must name
  const char* mentions;  // a word the message must contain
};

void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.name;
}

class BadInput : public EveryKind, public ::testing::WithParamInterface<BadCase> {};

TEST_P(BadInput, ExitsTwoAndTouchesNothing) {
  ASSERT_EQ(apply(declPath).code, 0);
  auto before = snapshotTree(root);
  const auto& c = GetParam();
  auto path = declare(c.text, "bad.toml");
  for (const char* cmd : {"apply", "plan"}) {
    Result r = mesh({cmd, path});
    EXPECT_EQ(r.code, 2) << cmd << " " << c.name << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(std::string("bad.toml:") + c.where), std::string::npos)
        << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(c.mentions), std::string::npos) << c.name << ": " << r.err;
    EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;

    // --json: the same error, on stdout, as JSON — the place in fields.
    Result j = mesh({cmd, path, "--json"});
    EXPECT_EQ(j.code, 2) << cmd << " " << c.name << ": " << j.out << j.err;
    const auto out = j.json();
    EXPECT_EQ(out["schema"], 1) << j.out;
    const auto& e = out["error"];
    EXPECT_EQ(e["kind"], "bad_input") << j.out;
    EXPECT_TRUE(e["file"].is_string() && e["file"].get<std::string>().ends_with("bad.toml"))
        << j.out;
    if (std::string_view(c.where).empty()) {
      // Where it is reported is not part of this case.
    } else if (!std::isdigit(static_cast<unsigned char>(c.where[0]))) {
      EXPECT_TRUE(e["line"].is_null()) << c.name << ": the whole file, no line: " << j.out;
    } else if (e["line"].is_number() && e["column"].is_number()) {
      const std::string place =
          std::to_string(e["line"].get<int>()) + ":" + std::to_string(e["column"].get<int>());
      EXPECT_TRUE(place.starts_with(c.where)) << c.name << ": " << place << " vs " << c.where;
    } else {
      ADD_FAILURE() << c.name << ": no line and column in " << j.out;
    }
    EXPECT_GE(out["errors"].size(), 1u) << j.out;
    // A suggestion is the hint, apart from the message.
    if (const std::string m = c.mentions; m.find("did you mean") != std::string::npos) {
      EXPECT_TRUE(e["hint"].is_string() &&
                  e["hint"].get<std::string>().starts_with(m.substr(m.find("did you mean"))))
          << j.out;
    }
    EXPECT_EQ(out["nothing_done"], "nothing was applied") << j.out;
  }
  EXPECT_EQ(snapshotTree(root), before) << c.name;
}

const std::string kValid = "[module.m.file.ok]\npath = \"/etc/m/config\"\ncontent = \"changed\"\n";
const std::string kBundle = "sha256:" + std::string(64, 'a');

INSTANTIATE_TEST_SUITE_P(
    Cases, BadInput,
    ::testing::Values(
        BadCase{"UnknownKey", kValid + "[module.m.file.x]\npath = \"/x\"\ncontnet = \"a\"\n",
                "6:", "contnet"},
        BadCase{"WrongType", kValid + "[module.m.file.x]\npath = 42\ncontent = \"a\"\n",
                "5:", "path"},
        BadCase{"RelativePath", kValid + "[module.m.file.x]\npath = \"etc/x\"\ncontent = \"a\"\n",
                "5:", "absolute"},
        BadCase{"DotDot", kValid + "[module.m.file.x]\npath = \"/etc/../x\"\ncontent = \"a\"\n",
                "5:", ".."},
        BadCase{"DuplicateId",
                kValid + "[module.m.file.x]\npath = \"/x\"\ncontent = \"a\"\n"
                         "[module.m.file.x]\npath = \"/y\"\ncontent = \"b\"\n",
                "7:", "x"},
        BadCase{
            "UnknownRequires",
            kValid + "[module.m.file.x]\npath = \"/x\"\ncontent = \"a\"\nrequires = [\"m.nope\"]\n",
            "7:", "m.nope"},
        BadCase{"Cycle",
                "[module.m.file.a]\npath = \"/a\"\ncontent = \"a\"\nrequires = [\"m.b\"]\n"
                "[module.m.file.b]\npath = \"/b\"\ncontent = \"b\"\nrequires = [\"m.a\"]\n",
                "", "m.a -> m.b"},
        BadCase{"BadMode",
                kValid + "[module.m.file.x]\npath = \"/x\"\ncontent = \"a\"\nmode = 644\n",
                "7:", "0644"},
        BadCase{
            "BadOwner",
            kValid + "[module.m.file.x]\npath = \"/x\"\ncontent = \"a\"\nowner = \"Bad Name!\"\n",
            "7:", "owner"},
        BadCase{
            "UnknownUser",
            kValid +
                "[module.m.file.x]\npath = \"/x\"\ncontent = \"a\"\nowner = \"no-such-user-xyz\"\n",
            "7:", "no-such-user-xyz"},
        BadCase{"BadDigest",
                kValid + "[module.m.archive.x]\npath = \"/x\"\nbundle = \"sha256:1234\"\n",
                "6:", "sha256"},
        BadCase{"NodeMismatch", "node = \"other\"\n" + kValid, "1:", "other"},
        // The root holds EveryKind's archive /opt/m/app and link /opt/m/current.
        BadCase{"FileInsideArchive",
                kValid + "[module.m.archive.app]\npath = \"/opt/m/app\"\nbundle = \"" + kBundle +
                    "\"\n[module.m.file.x]\npath = \"/opt/m/app/etc/conf\"\ncontent = \"a\"\n",
                "8:8", "bad.toml:5:8); mesh-host replaces an archive's tree whole"},
        BadCase{"FileBeneathLink",
                kValid + "[module.m.link.current]\npath = \"/opt/m/current\"\ntarget = "
                         "\"/opt/m/app\"\n[module.m.file.x]\npath = \"/opt/m/current/x\"\n"
                         "content = \"a\"\n",
                "8:8", "bad.toml:5:8); mesh-host never follows links"},
        BadCase{"ControlCharacterInPath",
                kValid + "[module.m.file.x]\npath = \"/etc/m/\\u001b]0;owned\\u0007\"\n"
                         "content = \"a\"\n",
                "5:8", "contains a control character (\\x1b at byte 8)"},
        BadCase{"FileInsideTheStateDirectory",
                kValid + "[module.m.file.x]\npath = \"/var/lib/mesh-host/node.key\"\n"
                         "content = \"a\"\n",
                "5:8", "inside mesh-host's state directory /var/lib/mesh-host"},
        BadCase{"MisspeltUnitKey",
                kValid + "[module.m.process.p]\nbundle = \"" + kBundle +
                    "\"\nunit = { ExecStart = \"x\", Restrat = \"always\" }\n",
                "6:", "unknown unit key 'Restrat' in process m.p; did you mean 'Restart'?"},
        BadCase{"TomlSyntax", kValid + "[module.m.file.x\n", "4:", "error"},
        // No resources is "remove everything mesh-host manages here": only when said.
        BadCase{"EmptyFile", "", " error: declaration ", "declares no resources"},
        BadCase{"CommentsOnly", "# [module.m.file.ok]\n# path = \"/etc/m/config\"\n",
                " error: declaration ", "write `empty = true` if that is what you want"},
        BadCase{"NodeAndSerialOnly", "node = \"test\"\nserial = 2\n", " error: declaration ",
                "would remove everything mesh-host manages on this node"},
        BadCase{"EmptyTrueWithResources", "empty = true\n" + kValid, "1:9",
                "empty = true but 1 resource is declared"}),
    [](const auto& info) { return info.param.name; });

// A path with control characters (here an OSC sequence that retitles a
// terminal) is refused, and no byte of it reaches the output raw.
TEST_F(BadInput, ControlCharactersAreNeverEchoedRaw) {
  ASSERT_EQ(apply(declPath).code, 0);
  auto before = snapshotTree(root);
  auto path = declare(
      "[module.m.file.x]\npath = \"/etc/m/\\u001b]0;owned\\u0007\\r\\u007f\"\ncontent = "
      "\"a\"\n[module.m.link.l]\npath = \"/etc/m/l\"\ntarget = \"\\u001b[2J\"\n",
      "bad.toml");
  for (const char* cmd : {"apply", "plan"}) {
    for (bool json : {false, true}) {
      std::vector<std::string> args{cmd, path};
      if (json) args.push_back("--json");
      Result r = mesh(args);
      EXPECT_EQ(r.code, 2) << cmd << ": " << r.out << r.err;
      EXPECT_NE(r.err.find("bad.toml:2:8: error: path '/etc/m/\\x1b]0;owned\\x07\\r\\x7f' in "
                           "file m.x contains a control character (\\x1b at byte 8)"),
                std::string::npos)
          << r.err;
      EXPECT_NE(r.err.find("bad.toml:6:10: error: target '\\x1b[2J' in link m.l contains a "
                           "control character (\\x1b at byte 1)"),
                std::string::npos)
          << r.err;
      for (const std::string* text : {&r.out, &r.err})
        for (char c : *text) {
          auto u = static_cast<unsigned char>(c);
          EXPECT_TRUE(c == '\n' || (u >= 0x20 && u != 0x7f))
              << cmd << ": raw byte 0x" << std::hex << int(u) << " in:\n"
              << *text;
        }
    }
  }
  EXPECT_EQ(snapshotTree(root), before);
}

// Issue 27: input nested 50,000 deep (~100 KB: dotted keys, table headers, inline tables,
// arrays) overflowed toml++'s recursion (exit 139). Whatever its shape, bad input is
// exit 2 with a message naming the place, and nothing is applied.
TEST_F(BadInput, DeeplyNestedInputIsRefusedNotACrash) {
  ASSERT_EQ(apply(declPath).code, 0);
  auto before = snapshotTree(root);
  std::string dotted = "a", header = "[a", inlined = "x = ";
  for (int k = 0; k < 50000; ++k) dotted += ".a", header += ".a";
  for (int k = 0; k < 20000; ++k) inlined += "{a.b = ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"dotted.toml", dotted + " = 1\n"},
      {"header.toml", header + "]\n"},
      {"inline.toml", inlined + "1\n"},
      {"arrays.toml", "x = " + std::string(50000, '[') + std::string(50000, ']') + "\n"}};
  for (const auto& [name, text] : cases) {
    for (const char* cmd : {"apply", "plan"}) {
      Result r = mesh({cmd, declare(text, name)});
      EXPECT_EQ(r.code, 2) << cmd << " " << name << ": " << r.err.substr(0, 300);
      EXPECT_NE(r.err.find(name + ":1:"), std::string::npos) << r.err.substr(0, 300);
      EXPECT_TRUE(r.err.find("levels deep here; at most 64") != std::string::npos ||
                  r.err.find("maximum nested value depth") != std::string::npos)
          << r.err.substr(0, 300);
    }
  }
  EXPECT_EQ(snapshotTree(root), before);
}

// Saying it is what makes an empty declaration remove everything.
TEST_F(BadInput, EmptyTrueRemovesEverything) {
  ASSERT_EQ(apply(declPath).code, 0);
  Result r = apply(declare("node = \"test\"\nempty = true\n", "empty.toml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const char* id : kIds) EXPECT_EQ(outcomeOf(r.json(), id)["outcome"], "removed") << id;
  EXPECT_FALSE(std::filesystem::exists(at("/etc/m/config")));
  EXPECT_FALSE(std::filesystem::exists(at("/opt/m/app")));
}

TEST_F(BadInput, MissingDeclarationFile) {
  Result r = mesh({"apply", work + "/nope.toml"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("nope.toml"), std::string::npos) << r.err;
}

TEST_F(BadInput, UnknownCommandLineOption) {
  Result r = mesh({"apply", declPath, "--bogus"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "apply has no option --bogus (mesh-host apply --help lists what it takes)\n");
}

// Issue 30: a mistyped command is named with the nearest one (CLI11 said only "A
// subcommand is required"); one nothing is near lists them all. Exit 2, nothing done.
TEST_F(BadInput, AnUnknownCommandSaysWhichWasMeant) {
  const auto before = snapshotTree(root);
  Result r = mesh({"aply", declPath});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "unknown command 'aply'; did you mean 'apply'?\n");
  r = mesh({"fleet", "stauts", "--etcd", "http://127.0.0.1:9"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "unknown fleet command 'stauts'; did you mean 'status'?\n");
  r = mesh({"frobnicate\x1b[2J"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown command 'frobnicate\\e[2J'; the commands are apply, plan, "
                       "status,"),
            std::string::npos)
      << r.err;
  r = mesh({"aply", "--json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.json()["error"]["message"], "unknown command 'aply'; did you mean 'apply'?");
  EXPECT_EQ(snapshotTree(root), before);
}

// Issue 30: an option the command does not take says which commands take it (CLI11
// said only "The following argument was not expected: --blobs"); one no command takes
// gets the nearest option of the command, if one is near.
TEST_F(BadInput, AnOptionTheCommandDoesNotTakeNamesTheCommandsThatDo) {
  Result r = mesh({"status", "--blobs", "/srv/blobs"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "status does not take --blobs; apply, plan, rollback and run do (mesh-host status "
            "--help lists what it takes)\n");
  r = mesh({"fleet", "push", "--interval=5s", declPath});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "fleet push does not take --interval; run does (mesh-host fleet push --help lists "
            "what it takes)\n");
  r = mesh({"status", "--jsn"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "status has no option --jsn; did you mean --json? (mesh-host status --help lists "
            "what it takes)\n");
}

}  // namespace
}  // namespace mesh::e2e
