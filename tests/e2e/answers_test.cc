// How mesh-host answers scripts: --detailed-exitcode tells "nothing changed" from
// "changed" from "failed"; --json answers on stdout even when the command line
// itself is wrong; a plan speaks of what would happen, never of what happened.
#include <algorithm>
#include <regex>

#include "harness.hh"

namespace mesh::e2e {
namespace {

class Answers : public Node {
 protected:
  std::string fileDecl(const std::string& content, bool broken = false) const {
    std::string t = "[module.m.file.a]\npath = \"/etc/m/a\"\ncontent = \"" + content + "\"\n";
    if (broken)
      t += "\n[module.m.archive.app]\npath = \"/opt/app\"\nbundle = \"sha256:" +
           std::string(64, 'd') + "\"\n";
    return t;
  }
  int detailed(const std::string& decl) {
    return mesh({"apply", decl, "--detailed-exitcode"}).code;
  }
};

// 0 nothing changed, 2 changes, 4 failures, 6 both; 1 bad input (2 is taken).
TEST_F(Answers, DetailedExitCodesTellChangesFromFailures) {
  EXPECT_EQ(detailed(declare(fileDecl("one"))), 2);
  EXPECT_EQ(detailed(declare(fileDecl("one"))), 0);
  EXPECT_EQ(detailed(declare(fileDecl("two", true))), 6);
  EXPECT_EQ(detailed(declare(fileDecl("two", true))), 4);
  EXPECT_EQ(detailed(declare("[module.m.file.a]\npath = \"relative\"\n", "bad.toml")), 1);
  EXPECT_EQ(mesh({"apply", declare(fileDecl("two")), "--detailed-exitcode", "--bogus"}).code, 1);
  // Without the flag the codes are apply's own.
  EXPECT_EQ(mesh({"apply", declare(fileDecl("three"))}).code, 0);
  EXPECT_EQ(mesh({"apply", declare("[module.m.file.a]\npath = \"relative\"\n", "bad.toml")}).code,
            2);
}

TEST_F(Answers, RollbackTakesDetailedExitCodesToo) {
  ASSERT_EQ(apply(declare(fileDecl("one"))).code, 0);
  ASSERT_EQ(apply(declare(fileDecl("two"))).code, 0);
  EXPECT_EQ(mesh({"rollback", "--detailed-exitcode"}).code, 2);
  EXPECT_EQ(mesh({"rollback", "2", "--detailed-exitcode"}).code, 2);
  EXPECT_EQ(mesh({"rollback", "2", "--detailed-exitcode"}).code, 0);
}

// Issue 30: plan takes --detailed-exitcode with Terraform's meaning (0 no changes, 2
// changes pending, 1 an error: a resource that would fail, or bad input); it was refused
// as an unknown option, with exit 1. Without it, plan keeps its own codes (3 pending).
TEST_F(Answers, PlanTakesDetailedExitCodesAsTerraformDoes) {
  const auto one = declare(fileDecl("one"));
  EXPECT_EQ(mesh({"plan", one}).code, 3);
  Result pending = mesh({"plan", one, "--detailed-exitcode"});
  EXPECT_EQ(pending.code, 2) << pending.out << pending.err;
  EXPECT_NE(pending.out.find("would create"), std::string::npos) << pending.out;
  ASSERT_EQ(apply(one).code, 0);
  EXPECT_EQ(mesh({"plan", one, "--detailed-exitcode"}).code, 0);
  EXPECT_EQ(mesh({"plan", declare(fileDecl("two", true)), "--detailed-exitcode"}).code, 1);
  EXPECT_EQ(mesh({"plan", declare("[module.m.file.a]\npath = \"relative\"\n", "bad.toml"),
                  "--detailed-exitcode"})
                .code,
            1);
  // A command that does not take it: bad input like any option it does not take (2),
  // not 1 as though the flag had been taken.
  Result status = mesh({"status", "--detailed-exitcode"});
  EXPECT_EQ(status.code, 2) << status.err;
  EXPECT_NE(status.err.find("status does not take --detailed-exitcode; apply, plan and rollback "
                            "do"),
            std::string::npos)
      << status.err;
}

// Issue 30: `status --json` has a summary as `apply --json` has (the seven outcome
// counts of each resource's last outcome, with the health counts), and each resource
// its path (null for a process, which has none), as each outcome of `apply --json` has.
TEST_F(Answers, StatusJsonHasASummaryAndEachResourceItsPath) {
  Result applied = mesh({"apply", declare(fileDecl("one", true)), "--json"});
  ASSERT_EQ(applied.code, 1) << applied.out << applied.err;
  // And so has each outcome of apply (and plan) --json.
  std::map<std::string, nlohmann::json> outcomePaths;
  const auto appliedJson = applied.json();
  for (const auto& o : appliedJson.at("outcomes"))
    outcomePaths[o.at("id").get<std::string>()] = o.at("path");
  EXPECT_EQ(outcomePaths["m.a"], "/etc/m/a") << applied.out;
  EXPECT_EQ(outcomePaths["m.app"], "/opt/app") << applied.out;
  Result r = mesh({"status", "--json"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const auto j = r.json();
  const auto& sum = j.at("summary");
  EXPECT_EQ(sum.at("resources"), 2) << sum.dump();
  EXPECT_EQ(sum.at("created"), 1) << sum.dump();
  EXPECT_EQ(sum.at("failed"), 1) << sum.dump();
  for (const char* zero : {"updated", "unchanged", "removed", "released", "skipped"})
    EXPECT_EQ(sum.at(zero), 0) << zero << " " << sum.dump();
  EXPECT_EQ(sum.at("failing"), 1) << sum.dump();
  EXPECT_EQ(sum.at("churning"), 0) << sum.dump();
  EXPECT_EQ(sum.at("healthy"), false) << sum.dump();
  std::map<std::string, nlohmann::json> paths;
  for (const auto& res : j.at("resources")) paths[res.at("id").get<std::string>()] = res.at("path");
  EXPECT_EQ(paths.at("m.a"), "/etc/m/a");
  EXPECT_EQ(paths.at("m.app"), "/opt/app");
}

// A command line that does not parse, asked for JSON, gets JSON.
TEST_F(Answers, AnUnknownOptionIsAJsonErrorOnStdout) {
  Result r = mesh({"status", "--json", "--no-such-option"});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  const auto j = r.json();
  EXPECT_EQ(j["schema"], 1);
  EXPECT_EQ(j["error"]["kind"], "bad_input");
  EXPECT_TRUE(j["error"]["file"].is_null());
  EXPECT_NE(j["error"]["message"].get<std::string>().find("no-such-option"), std::string::npos)
      << r.out;
}

// An error that is not bad input (here: no store to read) is kind "failed", exit 1.
TEST_F(Answers, AFailureIsAJsonErrorOnStdout) {
  Result r = mesh({"history", "--json"});
  ASSERT_NE(r.code, 0) << r.out;
  const auto j = r.json();
  EXPECT_EQ(j["schema"], 1);
  EXPECT_TRUE(j["error"]["kind"] == "failed" || j["error"]["kind"] == "bad_input") << r.out;
  EXPECT_EQ(j["error"]["kind"] == "failed" ? 1 : 2, r.code) << r.out;
}

// Every JSON answer says its schema.
TEST_F(Answers, EveryJsonAnswerCarriesItsSchema) {
  const auto decl = declare(fileDecl("one"));
  ASSERT_EQ(apply(decl).code, 0);
  for (const auto& args : std::vector<std::vector<std::string>>{{"apply", decl, "--json"},
                                                                {"plan", decl, "--json"},
                                                                {"status", "--json"},
                                                                {"history", "--json"},
                                                                {"generations", "--json"},
                                                                {"gc", "--dry-run", "--json"}}) {
    Result r = mesh(args);
    EXPECT_EQ(r.json()["schema"], 1) << args[0] << ": " << r.out;
  }
}

// A plan removing a file says it would delete it, in text and JSON alike.
TEST_F(Answers, APlanSpeaksInTheFutureTense) {
  ASSERT_EQ(apply(declare(fileDecl("one"))).code, 0);
  const auto emptied = declare("node = \"test\"\nempty = true\n", "empty.toml");
  Result text = plan(emptied);
  EXPECT_NE(text.out.find("would remove m.a (m): would delete"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("deleted"), std::string::npos) << text.out;
  EXPECT_EQ(outcomeOf(plan(emptied, true).json(), "m.a")["detail"], "would delete");
}

// The top-level --help lists every command with its description, and each command's
// --help is its own however it is asked for: mesh-host builds the options of the
// command named only, so `--help CMD` and `CMD --help` must find the same one.
TEST_F(Answers, HelpListsEveryCommandAndEachCommandsHelpIsItsOwn) {
  const auto run = [](std::vector<std::string> args) {
    args.insert(args.begin(), MESH_HOST_BIN);
    Result r = runCommand(args);
    EXPECT_EQ(r.code, 0) << args[1] << ": " << r.err;
    return r.out;
  };
  const std::string top = run({"--help"});
  const std::vector<std::string> commands = {"apply",    "plan", "status", "history", "generations",
                                             "rollback", "gc",   "run",    "seal",    "blob",
                                             "key",      "sign", "fleet"};
  for (const auto& command : commands) {
    // "  apply    one cycle now; …": the name, then its description's first words.
    std::smatch listed;
    ASSERT_TRUE(std::regex_search(top, listed, std::regex("\n  " + command + " +([^\n]{1,30})")))
        << command << ":\n"
        << top;
    const std::string own = run({command, "--help"});
    EXPECT_EQ(own.rfind(listed[1].str(), 0), 0u) << command << ":\n" << own;
    EXPECT_NE(own.find(" " + command + " [OPTIONS]"), std::string::npos) << own;
    EXPECT_EQ(run({"--help", command}), own) << command;
  }
  const std::string fleet = run({"fleet", "--help"});
  for (const char* sub : {"push", "status", "serve", "history", "enroll", "forget"}) {
    EXPECT_TRUE(std::regex_search(fleet, std::regex(std::string("\n  ") + sub + " ")))
        << sub << ":\n"
        << fleet;
    const std::string own = run({"fleet", sub, "--help"});
    EXPECT_NE(own.find(std::string("fleet ") + sub + " [OPTIONS]"), std::string::npos) << own;
    EXPECT_EQ(run({"fleet", "--help", sub}), own) << sub;
    EXPECT_EQ(run({"--help", "fleet", sub}), own) << sub;
  }
  // A command none of them names, or none at all: the same refusal as ever.
  for (const auto& args :
       std::vector<std::vector<std::string>>{{}, {"help"}, {"--bogus", "apply"}}) {
    std::vector<std::string> line = {MESH_HOST_BIN};
    line.insert(line.end(), args.begin(), args.end());
    Result r = runCommand(line);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
  }
}

// Each command's --help lists the options it takes, each with its default where it
// has one, and no other; an option a command does not take is refused, not ignored.
TEST_F(Answers, EachCommandsHelpListsOnlyItsOwnOptions) {
  const auto help = [](std::vector<std::string> args) {
    args.insert(args.begin(), MESH_HOST_BIN);
    args.push_back("--help");
    Result r = runCommand(args);
    EXPECT_EQ(r.code, 0) << args[1] << ": " << r.err;
    return r.out;
  };
  // An option line of the help: "  --root DIR   …" or "  -v,--verbose   …".
  const auto lists = [](const std::string& text, const std::string& option) {
    return std::regex_search(text, std::regex("\n  (-[a-z],)?" + option + "( |\n)"));
  };
  const std::vector<std::string> converging = {"--root",       "--state-dir", "--blobs",
                                               "--supervisor", "--unit-dir",  "--node",
                                               "--trust",      "--json",      "--verbose"};
  const std::map<std::string, std::vector<std::string>> takes = {
      {"apply", converging},
      {"plan", converging},
      {"rollback", converging},
      {"status",
       {"--root", "--state-dir", "--supervisor", "--unit-dir", "--node", "--json", "--verbose"}},
      {"history", {"--root", "--state-dir", "--node", "--json"}},
      {"generations", {"--root", "--state-dir", "--node", "--json"}},
      {"gc", {"--root", "--state-dir", "--node", "--json"}},
      {"key", {"--root", "--state-dir"}},
      {"seal", {"--trust"}},  // with --nodes: whose enrollments are believed
      {"sign", {}},
      {"blob", {}},
  };
  for (const auto& [command, own] : takes) {
    const std::string text = help({command});
    for (const auto& option : converging) {
      const bool expected = std::find(own.begin(), own.end(), option) != own.end();
      EXPECT_EQ(lists(text, option), expected) << command << " " << option << ":\n" << text;
    }
  }
  // Defaults are shown.
  EXPECT_NE(help({"apply"}).find("(default /)"), std::string::npos) << help({"apply"});
  EXPECT_NE(help({"history"}).find("(default 50)"), std::string::npos) << help({"history"});
  EXPECT_NE(help({"gc"}).find("(default 5)"), std::string::npos) << help({"gc"});
  EXPECT_NE(help({"status"}).find("(default 10)"), std::string::npos) << help({"status"});
  EXPECT_NE(help({"run"}).find("(default 5m)"), std::string::npos) << help({"run"});
  const std::string serve = help({"fleet", "serve"});
  EXPECT_FALSE(lists(serve, "--json")) << serve;
  EXPECT_NE(serve.find("(default 127.0.0.1:8080"), std::string::npos) << serve;
  for (const char* fleet : {"push", "status", "history", "enroll", "forget"})
    EXPECT_TRUE(lists(help({"fleet", fleet}), "--json")) << fleet;
  // Not taken: refused (exit 2), never silently ignored.
  Result seal = runCommand({MESH_HOST_BIN, "seal", "--root", root, "--to", "x", "f"});
  EXPECT_EQ(seal.code, 2) << seal.out << seal.err;
  EXPECT_NE(seal.err.find("--root"), std::string::npos) << seal.err;
  Result history = runCommand({MESH_HOST_BIN, "history", "--root", root, "--blobs", blobs});
  EXPECT_EQ(history.code, 2) << history.out << history.err;
}

}  // namespace
}  // namespace mesh::e2e
