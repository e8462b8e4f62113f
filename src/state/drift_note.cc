#include "state/drift_note.hh"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "state/state_dir.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/text_safe.hh"

namespace mesh::state {

namespace {

std::string notePath(const std::string& stateDir) {
  return StateDir{stateDir}.driftWatch();
}

}  // namespace

void noteDrift(const std::string& stateDir, const DriftNote& n) noexcept {
  try {
    if (!lstatPath(stateDir)) return;
    const nlohmann::json j = {{"at", n.at},
                              {"watched_dirs", n.watchedDirs},
                              {"unwatched", n.unwatched},
                              {"repairs", n.repairs},
                              {"backoff_ms", n.backoffMs}};
    atomicWrite(notePath(stateDir), jsonData(j) + "\n", 0640);
  } catch (...) {
  }
}

std::optional<DriftNote> driftNote(const std::string& stateDir) {
  std::optional<std::string> text;
  try {
    text = readFile(notePath(stateDir));
  } catch (const SysError&) {
    return std::nullopt;
  }
  if (!text) return std::nullopt;
  const auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  DriftNote n;
  n.at = j.value("at", int64_t{0});
  n.watchedDirs = j.value("watched_dirs", int64_t{0});
  n.unwatched = j.value("unwatched", int64_t{0});
  n.repairs = j.value("repairs", int64_t{0});
  n.backoffMs = j.value("backoff_ms", int64_t{0});
  return n;
}

void clearDriftNote(const std::string& stateDir) noexcept {
  ::unlink(notePath(stateDir).c_str());
}

}  // namespace mesh::state
