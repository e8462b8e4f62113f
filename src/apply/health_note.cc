#include "apply/health_note.hh"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "state/state_dir.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/text_safe.hh"

namespace mesh::apply {

void noteHealth(const std::string& stateDir, const HealthNote& n) noexcept {
  try {
    if (!lstatPath(stateDir)) return;
    nlohmann::json services = nlohmann::json::object();
    for (const auto& [id, h] : n.services)
      services[id] = {{"health", h.health}, {"reason", h.reason}, {"run_since_us", h.runSinceUs}};
    const nlohmann::json j = {{"at", n.at},
                              {"pid", n.pid ? n.pid : static_cast<int64_t>(::getpid())},
                              {"services", services}};
    atomicWrite(state::StateDir{stateDir}.healthChecks(), jsonData(j) + "\n", 0640);
  } catch (...) {
  }
}

std::optional<HealthNote> healthNote(const std::string& stateDir) {
  std::optional<std::string> text;
  try {
    text = readFile(state::StateDir{stateDir}.healthChecks());
  } catch (const SysError&) {
    return std::nullopt;
  }
  if (!text) return std::nullopt;
  const auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  try {
    HealthNote n;
    n.at = j.value("at", int64_t{0});
    n.pid = j.value("pid", int64_t{0});
    if (const auto s = j.find("services"); s != j.end() && s->is_object())
      for (const auto& [id, e] : s->items())
        if (e.is_object())
          n.services[id] = {e.value("health", std::string()), e.value("reason", std::string()),
                            e.value("run_since_us", int64_t{0})};
    return n;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

void clearHealthNote(const std::string& stateDir) noexcept {
  try {
    ::unlink(state::StateDir{stateDir}.healthChecks().c_str());
  } catch (...) {
  }
}

}  // namespace mesh::apply
