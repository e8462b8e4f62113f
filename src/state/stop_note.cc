#include "state/stop_note.hh"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "state/note_page.hh"
#include "state/state_dir.hh"
#include "util/fs.hh"
#include "util/text_safe.hh"
#include "util/trusted_path.hh"

namespace mesh::state {

void noteCycleStopped(const std::string& stateDir, const CycleStop& stop) noexcept {
  try {
    if (!lstatPath(stateDir)) return;
    // Written by path: only into a state directory no other user could swap.
    requireTrustedDirectory(std::filesystem::absolute(stateDir).lexically_normal().string());
    const nlohmann::json j = {{"cycle", stop.cycle}, {"signal", stop.signal}, {"at", stop.at}};
    if (Fd page = openNotePage(StateDir{stateDir}.cycleStopped()))
      (void)writeNotePage(page.get(), jsonData(j) + "\n");
  } catch (...) {
  }
}

void prepareStopPage(const std::string& stateDir) noexcept {
  prepareNotePage(StateDir{stateDir}.cycleStopped());
}

std::optional<CycleStop> cycleStopped(const std::string& stateDir) {
  const auto text = readNotePage(StateDir{stateDir}.cycleStopped());
  if (!text) return std::nullopt;
  const auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  CycleStop s;
  s.cycle = j.value("cycle", int64_t{0});
  s.signal = j.value("signal", "");
  s.at = j.value("at", int64_t{0});
  if (s.cycle <= 0) return std::nullopt;
  return s;
}

void clearCycleStopped(const std::string& stateDir) noexcept {
  clearNotePage(StateDir{stateDir}.cycleStopped());
}

}  // namespace mesh::state
