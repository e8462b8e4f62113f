// The names of what mesh-host keeps under --state-dir, for the layers that cannot
// include state/ (trust/ loads the node key). state/state_dir.hh builds every path
// from these; nothing else spells them (docs/state-store.md says what each holds).
#pragma once

#include <string>
#include <string_view>

namespace mesh::layout {

inline constexpr std::string_view kStore = "state.db";  // with -wal and -shm beside it
inline constexpr std::string_view kLock = "lock";    // names the state lock's holder, for readers
inline constexpr std::string_view kLocks = "locks";  // 0700: the locks themselves, the owner's only
inline constexpr std::string_view kLastError = "last-error";
// The same note written in place into a page made when there was room: what
// says why cycles cannot run when the state directory is full.
inline constexpr std::string_view kErrorPage = "last-error.page";
inline constexpr std::string_view kDeclarationError = "declaration-error";
// A cycle ended early because the agent was asked to stop (SIGTERM): which, and
// when; a page written in place, as last-error.page is.
inline constexpr std::string_view kCycleStopped = "cycle-stopped.page";
inline constexpr std::string_view kBlobs = "blobs";      // the default blob cache
inline constexpr std::string_view kBundles = "bundles";  // process bundles, one per digest
inline constexpr std::string_view kNodeKey = "node.key";
inline constexpr std::string_view kTrusted = "trusted";        // operator keys, *.pub
inline constexpr std::string_view kAgentLock = "locks/agent";  // one agent per state dir
inline constexpr std::string_view kAgentPid = "agent.pid";     // names the agent, for readers
inline constexpr std::string_view kOldAgentLock =
    "agent.lock";  // an older agent's lock: others could lock it
inline constexpr std::string_view kDriftWatch = "drift-watch";  // the drift watcher's note
// The agent's latest health check results (apply/health_note.hh).
inline constexpr std::string_view kHealthChecks = "health-checks";
inline constexpr std::string_view kServices = "services";  // builtin supervisor units
inline constexpr std::string_view kServiceLogs = "log";    // builtin supervisor logs
// 0700: what mesh-host first overwrote, kept to be put back (apply/originals.hh)
inline constexpr std::string_view kOriginals = "originals";

// mesh-host pause: why, who, since when.
inline constexpr std::string_view kPaused = "paused";
// What the agent's last cycle that only planned (paused, or run --noop) would change.
inline constexpr std::string_view kPending = "pending";

// `stateDir`/`name`.
inline std::string under(std::string_view stateDir, std::string_view name) {
  std::string out(stateDir);
  out += '/';
  out += name;
  return out;
}

// As help and messages show it when no state dir is at hand: "<state-dir>/node.key".
inline std::string shownUnder(std::string_view name) {
  return under("<state-dir>", name);
}

}  // namespace mesh::layout
