// mesh-host's entry point: one table of commands, one place that maps errors to
// exit codes and prints them as "mesh-host: <what>".
#include <sodium.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.hh"
#include "cli/heap.hh"
#include "cli/output.hh"
#include "util/error.hh"
#include "util/state_layout.hh"
#include "util/suggest.hh"
#include "util/text_safe.hh"

namespace {

using namespace mesh;
using namespace mesh::cli;

// How the command line asks to be answered, read from argv itself so that an
// error in parsing it is answered the same way.
struct Answer {
  bool json = false;      // --json: errors too go to stdout, as JSON
  bool detailed = false;  // --detailed-exitcode: bad input is 1, not 2 (2 means "changes")
  // `--detailed-exitcode` counts only for a command that takes it (apply, plan, rollback):
  // given to another, it is an option that command does not take, bad input like any.
  static Answer of(int argc, char** argv, std::string_view command) {
    Answer a;
    const bool takesDetailed = command == "apply" || command == "plan" || command == "rollback";
    for (int i = 1; i < argc; ++i) {
      const std::string_view arg = argv[i];
      if (arg == "--") break;
      a.json = a.json || arg == "--json";
      a.detailed = a.detailed || (takesDetailed && arg == "--detailed-exitcode");
    }
    return a;
  }
};

// Says what went wrong: "mesh-host: <what>" on stderr, and with --json the
// error object on stdout. Returns the exit code.
int fail(const Answer& answer, const std::exception& e, bool badInput,
         const std::string& nothingDone, const std::string& text) {
  // Several problems are several lines; anything a terminal obeys in them is escaped.
  printLines(text + "\n", stderr);
  if (badInput && !nothingDone.empty()) printLine("mesh-host: " + nothingDone, stderr);
  if (answer.json) std::puts(jsonOut(errorJson(e, badInput, badInput ? nothingDone : "")).c_str());
  if (!badInput) return kExitFailed;
  return answer.detailed ? kExitFailed : kExitBadInput;
}

// `nothingDone` is what bad input guarantees ("nothing was applied"); "" says nothing.
int guarded(const Answer& answer, const std::function<int()>& run, const std::string& nothingDone) {
  try {
    return run();
  } catch (const InputError& e) {
    return fail(answer, e, true, nothingDone, e.what());
  } catch (const Error& e) {
    return fail(answer, e, false, nothingDone, std::string("mesh-host: ") + e.what());
  } catch (const std::exception& e) {
    return fail(answer, e, false, nothingDone,
                std::string("mesh-host: internal error: ") + e.what());
  }
}

// The words that name the command: the first `n` arguments that are not options
// (mesh-host's own options, --help and --version, take no value; nor do fleet's before
// its subcommand), fewer when there are not that many.
std::vector<std::string_view> commandWords(int argc, char** argv, size_t n) {
  std::vector<std::string_view> words;
  for (int i = 1; i < argc && words.size() < n; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (!arg.starts_with('-')) words.push_back(arg);
  }
  return words;
}

// A word where a command is expected that names none: "unknown command 'aply'; did
// you mean 'apply'?", or the list when none is near. `of` is "" or "fleet ".
std::string unknownCommand(std::string_view word, const std::vector<std::string>& names,
                           std::string_view of) {
  const std::string near = nearest(word, names);
  std::string text = fmt::format("unknown {}command '{}'", of, shownText(word));
  if (!near.empty()) return fmt::format("{}; did you mean '{}'?", text, near);
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return fmt::format("{}; the {}commands are {} (mesh-host {}--help says what each does)", text, of,
                     list, of);
}

// The first option on the command line after the command's words that `sub` does not
// take ("--name" of "--name=value"), "" none.
std::string optionNotTaken(int argc, char** argv, size_t commandWordCount, CLI::App& sub) {
  size_t words = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (words < commandWordCount) {
      words += !arg.starts_with('-');
      continue;
    }
    if (!arg.starts_with('-') || arg == "-") continue;
    const std::string name(arg.substr(0, arg.find('=')));
    if (!sub.get_option_no_throw(name)) return name;
  }
  return {};
}

// `app`'s subcommand `name`, nullptr none.
CLI::App* subcommandNamed(CLI::App& app, std::string_view name) {
  auto found = app.get_subcommands([name](CLI::App* s) { return s->get_name() == name; });
  return found.empty() ? nullptr : found.front();
}

// Every long option `sub` takes ("--json"), for a suggestion.
std::vector<std::string> longOptionsOf(CLI::App& sub) {
  std::vector<std::string> names;
  for (const CLI::Option* o : sub.get_options())
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
  return names;
}

// "status does not take --blobs; apply, plan, rollback and run do (mesh-host status
// --help lists what it takes)", or for an option no command takes, the nearest one
// `command` takes. `takers` are the commands that take `option`.
std::string notTakenMessage(const std::string& command, const std::string& option,
                            const std::vector<std::string>& takers, CLI::App& sub) {
  const std::string shown = shownText(option);
  const std::string help = fmt::format("mesh-host {} --help lists what it takes", command);
  if (takers.empty()) {
    const std::string near = nearest(option, longOptionsOf(sub));
    if (!near.empty())
      return fmt::format("{} has no option {}; did you mean {}? ({})", command, shown, near, help);
    return fmt::format("{} has no option {} ({})", command, shown, help);
  }
  std::string who;
  for (size_t i = 0; i < takers.size(); ++i)
    who += (i == 0 ? "" : i + 1 == takers.size() ? " and " : ", ") + takers[i];
  return fmt::format("{} does not take {}; {} {} ({})", command, shown, who,
                     takers.size() == 1 ? "does" : "do", help);
}

}  // namespace

int main(int argc, char** argv) {
  if (sodium_init() < 0) {
    std::fprintf(stderr, "mesh-host: cannot initialise libsodium\n");
    return kExitFailed;
  }
  CLI::App app{"mesh-host: converges this node to its declaration and reports what it did"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("mesh-host ") + kVersion);

  CommonOptions common;
  std::string declPath;
  std::function<int()> chosen;
  ApplyOptions applyOptions;
  PlanOptions planOptions;
  StatusOptions statusOptions;
  HistoryOptions historyOptions;
  RollbackOptions rollbackOptions;
  GcOptions gcOptions;
  PauseOptions pauseOptions;
  RunOptions runOptions;
  KeyOptions keyOptions;
  SignOptions signOptions;
  BlobOptions blobOptions;
  SealOptions sealOptions;

  struct Command {
    const char* name;
    std::string help;
    bool takesDeclaration;
    unsigned common;  // the CommonOptions it takes (CommonOptions::Use)
    std::function<int()> run;
    std::function<void(CLI::App&)> options = {};  // the command's own options, if any
  };
  const Command table[] = {
      {"apply", "one cycle now; exit 0 ok, 1 a resource failed, 2 bad input (nothing applied)",
       true, CommonOptions::kConverge | CommonOptions::kKeep,
       [&] { return runApply(declPath, common, applyOptions); },
       [&](CLI::App& sub) { applyOptions.addTo(sub); }},
      {"plan",
       "what apply would do, with diffs (secrets redacted); exit 0 nothing to do, 1 a resource "
       "would fail, 2 bad input, 3 changes pending",
       true, CommonOptions::kConverge, [&] { return runPlan(declPath, common, planOptions); },
       [&](CLI::App& sub) { planOptions.addTo(sub); }},
      {"status", "the node as the state store shows it; exit 0 healthy, 1 failing or churning",
       false,
       CommonOptions::kStore | CommonOptions::kSupervisor | CommonOptions::kUnitDir |
           CommonOptions::kVerbose,
       [&] { return runStatus(common, statusOptions); },
       [&](CLI::App& sub) { statusOptions.addTo(sub); }},
      {"history",
       "outcomes with their reasons, cycle by cycle, newest first; with ID, also what mesh-host "
       "keeps to give back for it",
       false, CommonOptions::kStore, [&] { return runHistory(common, historyOptions); },
       [&](CLI::App& sub) { historyOptions.addTo(sub); }},
      {"generations", "every declaration applied, numbered; marks the current one", false,
       CommonOptions::kStore, [&] { return runGenerations(common); }},
      {"rollback",
       "re-apply generation N (default: the one before the current), putting back what an absent "
       "declared since removed; exit codes as apply",
       false, CommonOptions::kConverge | CommonOptions::kKeep,
       [&] { return runRollback(common, rollbackOptions); },
       [&](CLI::App& sub) { rollbackOptions.addTo(sub); }},
      {"gc",
       "remove bundles and blobs that no kept generation needs, and kept originals no record "
       "or declared resource needs",
       false, CommonOptions::kStore | CommonOptions::kKeep,
       [&] { return runGc(common, gcOptions); }, [&](CLI::App& sub) { gcOptions.addTo(sub); }},
      {"pause",
       "pause --reason TEXT: the agent's cycles only plan (pushes kept, drift noted, nothing "
       "applied) and apply refuses (exit 5) without --force, until resume; waits for a cycle "
       "in hand",
       false, CommonOptions::kStore, [&] { return runPause(common, pauseOptions); },
       [&](CLI::App& sub) { pauseOptions.addTo(sub); }},
      {"resume", "ends mesh-host pause: the agent applies again from its next cycle, at once",
       false, CommonOptions::kStore, [&] { return runResume(common); }},
      {"run",
       "the agent: a cycle every interval (+ random splay), at once on SIGHUP or when the "
       "declaration changes (with --etcd: on every push); SIGTERM stops after the resource in "
       "hand",
       false, (CommonOptions::kConverge | CommonOptions::kKeep) & ~CommonOptions::kJson,  // logs
       [&] { return runRun(common, runOptions); }, [&](CLI::App& sub) { runOptions.addTo(sub); }},
      {"seal",
       "prints FILE's secret sealed to nodes' public keys (--to KEY …, or enrolled --nodes), one "
       "value for sealed = \"…\"",
       false, 0, [&] { return runSeal(sealOptions); },
       [&](CLI::App& sub) { sealOptions.addTo(sub); }},
      {"blob", "blob add FILE --to DIR: publish a bundle into a directory store, print its digest",
       false, 0, [&] { return runBlob(blobOptions); },
       [&](CLI::App& sub) { blobOptions.addTo(sub); }},
      {"key",
       "key init|show: this node's key pair (" + layout::shownUnder(layout::kNodeKey) +
           "), or with --operator FILE an operator's signing key; prints the public key",
       false, CommonOptions::kRoot | CommonOptions::kStateDir,
       [&] { return runKey(common, keyOptions); }, [&](CLI::App& sub) { keyOptions.addTo(sub); }},
      {"sign", "writes DECL.sig: a signature over DECL's exact bytes with an operator key", true, 0,
       [&] { return runSign(declPath, signOptions); },
       [&](CLI::App& sub) { signOptions.addTo(sub); }},
  };
  // Every command is listed (--help, and the errors that name none or a wrong one),
  // but only the one named is given its options: building all of them cost most of
  // what a command does before it starts (~2 M instructions). require_subcommand(1)
  // lets the parse enter no command but the first one named.
  const auto words = commandWords(argc, argv, 2);
  const std::string_view named = words.empty() ? std::string_view() : words[0];
  for (const auto& c : table) {
    auto* sub = app.add_subcommand(c.name, c.help);
    if (named != c.name) continue;
    if (c.takesDeclaration) sub->add_option("DECL", declPath, "the declaration (TOML)")->required();
    common.addTo(*sub, c.common);
    if (c.options) c.options(*sub);
    sub->callback([&chosen, run = c.run] { chosen = run; });
  }
  // apply takes DECL, or --plan PLAN (which names its declaration) instead.
  if (named == "apply") app.get_subcommand("apply")->get_option("DECL")->required(false);

  // `fleet` works on etcd, not on this node: it takes its own options, not the common ones.
  std::string nothingDone = "nothing was applied";
  FleetOptions fleetOptions;
  FleetPushOptions fleetPushOptions;
  FleetHistoryOptions fleetHistoryOptions;
  FleetServeOptions fleetServeOptions;
  FleetEnrollOptions fleetEnrollOptions;
  FleetForgetOptions fleetForgetOptions;
  FleetRolloutOptions fleetRolloutOptions;
  auto* fleetCmd = app.add_subcommand(
      "fleet",
      "fleet push|status|serve|history|rollout|enroll|forget: push a signed declaration to nodes "
      "through etcd, see how far each node has converged (or watch it live on a page) and what "
      "was pushed, enroll a node's key, forget a node that is gone");
  struct FleetCommand {
    const char* name;
    const char* help;
    std::function<void(CLI::App&)> options;  // all it takes, in the order --help lists them
    const char* footer;                      // "" none
    const char* nothingDone;                 // what its bad input guarantees; "" nothing
    std::function<int()> run;
  };
  const FleetCommand fleetTable[] = {
      {"push",
       "signs a statement for DECL (its digest, the cluster, the nodes as given, the serial, the "
       "push time and key, --max-parallel-restarts) with an operator key and puts it with DECL "
       "to each node's declaration key in etcd, one push at a time per cluster; exit 0 pushed "
       "(with --wait: every node's status carries the pushed digest; with --canary: every wave "
       "stayed healthy), 1 etcd unreachable, another push held the lock past --lock-timeout or "
       "a rollout is running (nothing pushed), a node's declaration changed during the push, "
       "(with --wait) a node refused it, failed or timed out, or (with --canary) the rollout "
       "halted, 2 bad input (nothing pushed)",
       [&](CLI::App& sub) {
         fleetOptions.addTo(sub);
         fleetPushOptions.addTo(sub);
         // Optional for push: --wait counts a node's status only when it verifies against an
         // enrollment signed by the pushing key or one of these.
         fleetOptions.trust.addTo(sub);
       },
       "Every node named (--node, --nodes; at least one) is checked before anything is put: a "
       "declaration that does not parse or has no serial, a glob that matches no known node, or "
       "a node holding a statement signed by this key with a higher serial, or the same serial "
       "with other text, is bad input (exit 2) and nothing is pushed; a value there not signed "
       "by this key for that node does not count. The same serial with the same text is left "
       "unchanged. See docs/fleet.md.",
       "nothing was pushed", [&] { return runFleetPush(fleetOptions, fleetPushOptions); }},
      {"status",
       "one row per node known in etcd: wanted and applied serial, applied digest, state, last "
       "seen, then how many nodes are on each version and who pushed it when; exit 0 "
       "every node converged (or none known), 1 a node down, behind, refused, failing or "
       "churning, or etcd unreachable, 2 bad input",
       [&](CLI::App& sub) {
         fleetOptions.addTo(sub);
         fleetOptions.trust.addTo(sub);
       },
       "STATE, first that applies: forged (a status, heartbeat or enrollment it judges by that "
       "does not verify against the node's enrolled key and --trust), unenrolled (a node that "
       "publishes but whose key is not enrolled), down (no status key: the node's lease is gone; "
       "or its status is not on the live lease it names, nor with its heartbeat on one live "
       "lease they both name), refused (it refused the value pushed now), failing, behind (its "
       "status does not carry the pushed digest and serial), churning, converged. Reads every "
       "node's keys in one range, at one etcd revision (and the seen copies when a node is "
       "down). Signatures it verified are remembered in $XDG_CACHE_HOME/mesh-host (else "
       "~/.cache/mesh-host; remove it to forget them): a value changed since is verified again, "
       "and an enrollment's signer is checked against --trust every time. See docs/fleet.md.",
       "", [&] { return runFleetStatus(fleetOptions); }},
      {"history",
       "the pushes recorded in etcd, newest first: when, by which key, serial, digest, "
       "selector, how many nodes, and their results (with --wait: applied, failed, refused, "
       "timed out); exit 0 listed, 1 etcd unreachable, 2 bad input",
       [&](CLI::App& sub) {
         fleetOptions.addTo(sub);
         fleetHistoryOptions.addTo(sub);
         fleetOptions.trust.addTo(sub);
       },
       "A record is informational: whoever can write etcd can write one, and nodes act only on "
       "the signed statement. Each push signs its record with its key: with --trust KEY, a "
       "record signed by KEY as its pusher is marked verified, any other NOT VERIFIED. etcd "
       "keeps the last 100 pushes of a cluster. See docs/fleet.md.",
       "", [&] { return runFleetHistory(fleetOptions, fleetHistoryOptions); }},
      {"serve",
       "serves a read-only page that shows the fleet live: the versions and who pushed them, "
       "the newest push's rollout, the nodes by state with their errors, each linking to its "
       "node's page (its last cycle's outcomes and reasons, file diffs, serials over time, "
       "services); the judgement of fleet status, updated from one etcd watch through "
       "server-sent events (GET / the page, /api/fleet the fleet status --json object, /events "
       "the stream, /node?name=N a node's page, /api/node?name=N its JSON); runs "
       "until SIGINT or SIGTERM (exit 0); exit 1 etcd unreachable at start or the address "
       "taken, 2 bad input",
       [&](CLI::App& sub) {
         fleetOptions.addTo(sub, /*takesJson=*/false);
         fleetOptions.trust.addTo(sub);
         fleetServeOptions.addTo(sub);
       },
       "Binds 127.0.0.1:8080 unless --listen says otherwise; an address other than loopback is "
       "refused without --listen-public, and on loopback only requests addressed to a loopback "
       "name are answered. See docs/fleet.md.",
       "", [&] { return runFleetServe(fleetOptions, fleetServeOptions); }},
      {"rollout",
       "the cluster's rollout (fleet push --canary): status shows it (wave, state, why it "
       "halted); resume drives it on from the wave it was in after its driver died, or after "
       "a halt goes on with the next wave anyway; abort stops it (--revert: the nodes it "
       "reached get their previous declaration back); exit 0 shown, done or aborted (status: "
       "none, running or done), 1 halted, reverted, etcd unreachable or a lock held past "
       "--lock-timeout, 2 bad input (nothing to resume or abort)",
       [&](CLI::App& sub) {
         fleetOptions.addTo(sub);
         fleetRolloutOptions.addTo(sub);
         fleetOptions.trust.addTo(sub);
       },
       "The rollout's record lives in etcd, signed by the key that started it; resume acts only "
       "on a record signed by --key or a --trust key. See docs/fleet.md.",
       "nothing was done", [&] { return runFleetRollout(fleetOptions, fleetRolloutOptions); }},
      {"enroll",
       "records NODE's public key (mesh-host key show on that node), signed with an operator "
       "key: fleet status then believes only statuses that key signed; exit 0 enrolled, 1 "
       "etcd unreachable, 2 bad input",
       [&](CLI::App& sub) {
         fleetOptions.addTo(sub);
         fleetEnrollOptions.addTo(sub);
       },
       "", "nothing was enrolled",
       [&] { return runFleetEnroll(fleetOptions, fleetEnrollOptions); }},
      {"forget",
       "removes every key of a node that is gone (decommissioned, or a mistyped name): its "
       "declaration, status, heartbeat and enrollment; exit 0 forgotten, 1 etcd unreachable, 2 "
       "bad input (an unknown node, or one that is up without --force: nothing removed)",
       [&](CLI::App& sub) {
         fleetOptions.addTo(sub);
         fleetForgetOptions.addTo(sub);
       },
       "", "nothing was removed", [&] { return runFleetForget(fleetOptions, fleetForgetOptions); }},
  };
  if (named == "fleet") {
    fleetCmd->require_subcommand(1);
    for (const auto& c : fleetTable) {
      auto* sub = fleetCmd->add_subcommand(c.name, c.help);
      c.options(*sub);
      if (*c.footer) sub->footer(c.footer);
      sub->callback([&chosen, &nothingDone, c] {
        nothingDone = c.nothingDone;
        chosen = c.run;
      });
    }
  }

  const Answer answer = Answer::of(argc, argv, named);
  const auto badInput = [&answer](const std::string& text) {
    printLine(text, stderr);
    if (answer.json) std::puts(jsonOut(errorJson(InputError(text), true, "")).c_str());
    return answer.detailed ? kExitFailed : kExitBadInput;
  };
  std::vector<std::string> names, fleetNames;
  for (const auto& c : table) names.emplace_back(c.name);
  names.emplace_back("fleet");
  for (const auto& c : fleetTable) fleetNames.emplace_back(c.name);
  if (!named.empty() && std::find(names.begin(), names.end(), named) == names.end())
    return badInput(unknownCommand(named, names, ""));
  if (named == "fleet" && words.size() > 1 &&
      std::find(fleetNames.begin(), fleetNames.end(), words[1]) == fleetNames.end())
    return badInput(unknownCommand(words[1], fleetNames, "fleet "));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // An option the command does not take: say which commands take it. Only now are
    // the other commands' options built (the parse above built the named one's only).
    CLI::App* sub = named.empty() ? nullptr : subcommandNamed(app, named);
    const bool fleetSub = sub == fleetCmd && words.size() > 1;
    if (fleetSub) sub = subcommandNamed(*fleetCmd, words[1]);
    const std::string option =
        sub && e.get_exit_code() != 0 ? optionNotTaken(argc, argv, fleetSub ? 2 : 1, *sub) : "";
    if (!option.empty()) {
      std::vector<std::string> takers;
      for (const auto& c : table) {
        CLI::App scratch;
        CommonOptions unused;
        unused.addTo(scratch, c.common);
        if (c.options) c.options(scratch);
        if (scratch.get_option_no_throw(option)) takers.emplace_back(c.name);
      }
      for (const auto& c : fleetTable) {
        CLI::App scratch;
        c.options(scratch);
        if (scratch.get_option_no_throw(option)) takers.push_back(std::string("fleet ") + c.name);
      }
      const std::string command = fleetSub ? "fleet " + std::string(words[1]) : std::string(named);
      return badInput(notTakenMessage(command, option, takers, *sub));
    }
    int code = app.exit(e);  // --help and --version: 0, and their text
    if (code == 0) return 0;
    if (answer.json) std::puts(jsonOut(errorJson(InputError(e.what()), true, "")).c_str());
    return answer.detailed ? kExitFailed : kExitBadInput;
  }
  // The agent and the page server run for long; every other command is one shot.
  if (!app.got_subcommand("run") && !(named == "fleet" && fleetCmd->got_subcommand("serve")))
    tuneHeapForOneShot();
  return guarded(answer, chosen, nothingDone);
}
