// `mesh-host pause --reason TEXT` and `mesh-host resume` (Puppet's `agent --disable
// "msg"` / `--enable`): while paused, the agent's cycles only plan — pushes and
// declaration edits are kept and applied after resume, drift is noted, not repaired —
// and apply and rollback refuse (exit 5) unless --force. The pause is a file in the
// state directory (state/pause.hh): durable, and the running agent sees it at once.
#include <cstdio>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/commands.hh"
#include "cli/output.hh"
#include "state/drift_note.hh"
#include "state/lock.hh"
#include "state/pause.hh"
#include "state/store.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/text_safe.hh"
#include "util/time_text.hh"

namespace mesh::cli {

namespace {

// "; the agent (pid 42) only plans from now on" — or that none runs.
std::string agentText(const std::string& stateDir, bool paused) {
  const auto seen = state::agentRunning(stateDir);
  if (!seen) return "";
  if (!seen->running) return paused ? "; no agent runs now: one started later only plans" : "";
  const std::string pid = seen->pid ? fmt::format(" (pid {})", seen->pid) : "";
  return paused ? fmt::format("; the agent{} only plans from now on", pid)
                : fmt::format("; the agent{} applies from its next cycle, now", pid);
}

}  // namespace

void PauseOptions::addTo(CLI::App& cmd) {
  cmd.add_option("--reason", reason,
                 "why, for whoever looks next (status, the metrics, fleet status show it)")
      ->option_text("TEXT")
      ->required();
}

std::optional<int> refuseWhilePaused(const CommonOptions& o, const char* command, bool force) {
  const auto p = state::readPause(o.stateDir);
  if (!p) return std::nullopt;
  if (force) {
    printLine(fmt::format("mesh-host: {}; {} --force: applying anyway (the pause stays)",
                          state::pauseText(*p), command),
              stderr);
    return std::nullopt;
  }
  printLine(fmt::format("mesh-host: {}; nothing was applied", state::pauseText(*p)), stderr);
  printLine(fmt::format("mesh-host: `mesh-host resume` ends the pause; `mesh-host {} --force` "
                        "applies while it lasts; `mesh-host plan` shows what would change",
                        command),
            stderr);
  if (o.json)
    std::puts(jsonOut(nlohmann::json{{"schema", kJsonSchema},
                                     {"node", o.node},
                                     {"applied", false},
                                     {"paused", pauseJson(p)}})
                  .c_str());
  return kExitPaused;
}

int runPause(CommonOptions& o, const PauseOptions& p) {
  o.resolve();
  if (p.reason.find_first_not_of(" \t\n") == std::string::npos)
    throw InputError("--reason: say why the node is paused (it is shown to whoever looks next)");
  makeDirs(o.stateDir, 0750);
  // Under the state lock: once pause returns, no cycle that applies is running (one
  // in hand is waited for), and every later one only plans.
  auto lock = state::StateLock::tryAcquire(o.stateDir, state::StateLock::Kind::Exclusive);
  if (!lock) {
    if (!o.json) printLine("mesh-host: waiting for the cycle in hand to finish…", stderr);
    lock = state::StateLock::acquire(o.stateDir, state::StateLock::Kind::Exclusive);
  }
  if (const auto was = state::readPause(o.stateDir)) {
    if (o.json)
      std::puts(jsonOut(nlohmann::json{{"schema", kJsonSchema},
                                       {"node", o.node},
                                       {"paused", pauseJson(was)},
                                       {"changed", false}})
                    .c_str());
    else
      printLine(
          fmt::format("already {}; left as it is (mesh-host resume first, to pause "
                      "with another reason)",
                      state::pauseText(*was)));
    return kExitOk;
  }
  const auto pause = state::pauseByMe(p.reason);
  state::writePause(o.stateDir, pause);
  if (o.json)
    std::puts(jsonOut(nlohmann::json{{"schema", kJsonSchema},
                                     {"node", o.node},
                                     {"paused", pauseJson(pause)},
                                     {"changed", true}})
                  .c_str());
  else
    printLine(state::pauseText(pause) + agentText(o.stateDir, true));
  return kExitOk;
}

int runResume(CommonOptions& o) {
  o.resolve();
  const auto was = state::readPause(o.stateDir);
  const bool removed = state::removePause(o.stateDir);
  if (o.json) {
    std::puts(jsonOut(nlohmann::json{{"schema", kJsonSchema},
                                     {"node", o.node},
                                     {"was", pauseJson(was)},
                                     {"changed", removed}})
                  .c_str());
  } else if (removed && was) {
    printLine(
        fmt::format("resumed: was {}{}", state::pauseText(*was), agentText(o.stateDir, false)));
  } else {
    printLine("not paused: nothing to resume");
  }
  return kExitOk;
}

}  // namespace mesh::cli
