#include "state/pending_note.hh"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "state/state_dir.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/text_safe.hh"

namespace mesh::state {

// The file: {at, why, pid, failed, changes: [{id, outcome, reason}]}.
void notePending(const std::string& stateDir, const PendingNote& n) noexcept {
  try {
    if (!lstatPath(stateDir)) return;
    nlohmann::json changes = nlohmann::json::array();
    for (const auto& c : n.changes)
      changes.push_back({{"id", c.id}, {"outcome", c.outcome}, {"reason", c.reason}});
    const nlohmann::json j = {{"at", n.at},
                              {"why", n.why},
                              {"pid", n.pid ? n.pid : static_cast<int64_t>(::getpid())},
                              {"failed", n.failed},
                              {"changes", std::move(changes)}};
    atomicWrite(StateDir{stateDir}.pending(), jsonData(j) + "\n", 0640);
  } catch (...) {
  }
}

std::optional<PendingNote> pendingNote(const std::string& stateDir) {
  std::optional<std::string> text;
  try {
    text = readFile(StateDir{stateDir}.pending());
  } catch (const SysError&) {
    return std::nullopt;
  }
  if (!text) return std::nullopt;
  const auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  PendingNote n;
  try {
    n.at = j.value("at", int64_t{0});
    n.why = j.value("why", "");
    n.pid = j.value("pid", int64_t{0});
    n.failed = j.value("failed", int64_t{0});
    if (j.contains("changes") && j["changes"].is_array())
      for (const auto& c : j["changes"])
        if (c.is_object())
          n.changes.push_back({c.value("id", ""), c.value("outcome", ""), c.value("reason", "")});
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  return n;
}

void clearPendingNote(const std::string& stateDir) noexcept {
  (void)::unlink(StateDir{stateDir}.pending().c_str());
}

}  // namespace mesh::state
