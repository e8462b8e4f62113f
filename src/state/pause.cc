#include "state/pause.hh"

#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "state/state_dir.hh"
#include "util/clock.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/text_safe.hh"
#include "util/time_text.hh"

namespace mesh::state {

namespace {

std::string userName(uid_t uid) {
  passwd pw{};
  passwd* found = nullptr;
  char buf[4096];
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found) return found->pw_name;
  return fmt::format("uid {}", uid);
}

}  // namespace

Pause pauseByMe(std::string reason) {
  Pause p;
  p.reason = std::move(reason);
  p.uid = ::getuid();
  p.user = userName(::getuid());
  // Under sudo, root paused it for someone: both are named.
  if (const char* sudo = std::getenv("SUDO_USER"); sudo && *sudo && p.uid == 0)
    p.user += fmt::format(" (sudo by {})", sudo);
  p.sinceMs = unixNowMs();
  return p;
}

// The file: a JSON object {reason, uid, user, since_ms}.
void writePause(const std::string& stateDir, const Pause& p) {
  const nlohmann::json j = {
      {"reason", p.reason}, {"uid", p.uid}, {"user", p.user}, {"since_ms", p.sinceMs}};
  atomicWrite(StateDir{stateDir}.paused(), jsonData(j) + "\n", 0644);
}

std::optional<Pause> readPause(const std::string& stateDir) {
  const std::string path = StateDir{stateDir}.paused();
  const auto text = readFile(path);
  if (!text) return std::nullopt;
  Pause p;
  const auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) {
    p.reason = "(" + path + " is damaged; mesh-host resume removes it)";
    return p;
  }
  p.reason = j.value("reason", "");
  p.uid = j.value("uid", int64_t{-1});
  p.user = j.value("user", "");
  p.sinceMs = j.value("since_ms", int64_t{0});
  return p;
}

bool removePause(const std::string& stateDir) {
  const std::string path = StateDir{stateDir}.paused();
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return false;
    throwSys("cannot remove " + path);
  }
  syncDir(stateDir);
  return true;
}

std::string pauseText(const Pause& p) {
  return fmt::format("paused by {} (uid {}) since {}: {}", p.user.empty() ? "?" : p.user, p.uid,
                     p.sinceMs ? isoTime(p.sinceMs) : "?", p.reason);
}

}  // namespace mesh::state
