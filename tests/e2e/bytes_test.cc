// Issue 27.1 and 27.2: bytes from outside — a service's last output line holding \377 and
// ESC (its failure reason), a file name `evil\xff…` a local user plants in an archive's
// directory — driven through every local output: apply, plan, status, history,
// generations (text and --json) and the metrics file. Each must run to its end (no
// "internal error"), its JSON must parse, and no raw ESC, CR or invalid byte may reach
// the terminal. (The agent's log and the fleet commands: tests/fleet/nodes_test.cc;
// the log formats: tests/unit/agent/log_test.cc.)
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

// No byte a terminal would obey and nothing that is not UTF-8: printable ASCII, line
// breaks, tabs, and valid UTF-8 above C1.
void expectNothingRaw(const std::string& what, const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) continue;
    ASSERT_TRUE(c >= 0xc2 && !(c == 0xc2 && i + 1 < text.size() &&
                               static_cast<unsigned char>(text[i + 1]) < 0xa0))
        << what << ": raw byte " << int(c) << " at " << i << " in:\n"
        << text;
    // The rest of a valid sequence: continuation bytes.
    const size_t n = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
    for (size_t k = 1; k <= n; ++k)
      ASSERT_TRUE(i + k < text.size() && (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80)
          << what << ": invalid UTF-8 at " << i << " in:\n"
          << text;
    i += n;
  }
}

class Bytes : public Node {
 protected:
  void SetUp() override {
    Node::SetUp();
    extraArgs = {"--supervisor", "builtin"};
  }
  void TearDown() override {
    apply(declare("node = \"test\"\nempty = true\n", "empty.toml"));
    Node::TearDown();
  }
};

TEST_F(Bytes, HostileBytesThroughEveryLocalOutputNeverCrashOrReachTheTerminalRaw) {
  const std::string svc = publish(makeArchive(
      {{"bin/svc",
        "#!/bin/sh\nprintf 'crash \\377 \\033[2J\\033[Hconverged \\302\\233 \\r\\n'\nexit 1\n"}},
      "chmod 755 bin/svc && tar -cf out bin"));
  const std::string site =
      publish(makeArchive({{"index.html", "<p>site</p>\n"}}, "tar -cf out index.html"));
  // What a local user owning the directory plants there.
  fs::create_directories(at("/srv/app"));
  std::ofstream(at("/srv/app/evil\xff\x1b[2J\r")) << "x";
  const std::string decl = declare(fmt::format(R"(
[module.m.archive.app]
path = "/srv/app"
bundle = "{}"

[module.m.process.svc]
bundle = "{}"
unit = {{ ExecStart = "{{bundle}}/bin/svc" }}
)",
                                               site, svc));
  const std::string metrics = work + "/metrics.prom";
  Result applied = mesh({"apply", decl, "--json", "--metrics", metrics});
  EXPECT_EQ(applied.code, 1) << applied.out << applied.err;
  const auto report = applied.json();
  EXPECT_EQ(outcomeOf(report, "m.app")["outcome"], "failed") << applied.out;
  EXPECT_NE(outcomeOf(report, "m.app")["reason"].get<std::string>().find("evil\xef\xbf\xbd"),
            std::string::npos)
      << applied.out;
  EXPECT_EQ(outcomeOf(report, "m.svc")["outcome"], "failed") << applied.out;
  expectNothingRaw("apply --json", applied.out + applied.err);
  expectNothingRaw("the metrics file", slurp(metrics));

  Result text = mesh({"apply", decl});
  EXPECT_EQ(text.code, 1) << text.out << text.err;
  expectNothingRaw("apply", text.out + text.err);
  EXPECT_NE(text.out.find("evil\\xff\\e[2J\\r"), std::string::npos) << text.out;

  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"plan", decl}, {"status"}, {"history"}, {"history", "m.app"}, {"generations"}}) {
    const std::string what = fmt::format("{}", fmt::join(args, " "));
    Result r = mesh(args);
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << what << ": " << r.err;
    expectNothingRaw(what, r.out + r.err);
    auto withJson = args;
    withJson.push_back("--json");
    Result j = mesh(withJson);
    EXPECT_EQ(j.err.find("internal error"), std::string::npos) << what << " --json: " << j.err;
    EXPECT_FALSE(j.json().contains("error")) << what << " --json: " << j.out;
    expectNothingRaw(what + " --json", j.out + j.err);
  }
}

}  // namespace
}  // namespace mesh::e2e
