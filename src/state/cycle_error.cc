#include "state/cycle_error.hh"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>

#include "state/note_page.hh"
#include "state/state_dir.hh"
#include "util/clock.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/trusted_path.hh"

namespace mesh::state {

namespace {

std::string cycleErrorPath(const std::string& stateDir) {
  return StateDir{stateDir}.lastError();
}

// The note's text: the unix ms of the failure on the first line, the message after it.
std::string cycleErrorText(int64_t at, const std::string& message) {
  return fmt::format("{}\n{}\n", at, message);
}

CycleError parseCycleError(std::string_view text) {
  CycleError e;
  const auto eol = text.find('\n');
  auto [end, ec] = std::from_chars(text.data(), text.data() + std::min(eol, text.size()), e.at);
  if (ec != std::errc()) e.at = 0;
  e.message = std::string(eol == std::string::npos ? text : text.substr(eol + 1));
  while (!e.message.empty() && e.message.back() == '\n') e.message.pop_back();
  return e;
}

std::optional<CycleError> readErrorPage(const std::string& stateDir) {
  auto text = readNotePage(StateDir{stateDir}.errorPage());
  if (!text) return std::nullopt;
  return parseCycleError(*text);
}

}  // namespace

void prepareErrorPage(const std::string& stateDir) noexcept {
  prepareNotePage(StateDir{stateDir}.errorPage());
}

void noteCycleError(const std::string& stateDir, const std::string& message) noexcept {
  try {
    // Into an existing state directory only: a missing one is the error itself,
    // and creating it here would do it with the wrong mode.
    if (!lstatPath(stateDir)) return;
    // Nor into one another user could swap: the note is written by path.
    requireTrustedDirectory(std::filesystem::absolute(stateDir).lexically_normal().string());
    const int64_t now = unixNowMs();
    const std::string text = cycleErrorText(now, message);
    // In place first: that needs no new block, so it holds on a full disk too.
    if (Fd page = openNotePage(StateDir{stateDir}.errorPage());
        page && writeNotePage(page.get(), text)) {
      (void)::unlink(cycleErrorPath(stateDir).c_str());  // an older note must not outrank it
      return;
    }
    atomicWrite(cycleErrorPath(stateDir), text, 0640);
  } catch (...) {
  }
}

std::optional<CycleError> lastCycleError(const std::string& stateDir) {
  std::optional<std::string> text;
  try {
    text = readFile(cycleErrorPath(stateDir));
  } catch (const SysError&) {
    // unreadable to this user: as for the store, status says what it can
  }
  auto page = readErrorPage(stateDir);
  if (!text) return page;
  auto file = parseCycleError(*text);
  if (page && page->at > file.at) return page;
  return file;
}

void clearCycleError(const std::string& stateDir) {
  if (::unlink(cycleErrorPath(stateDir).c_str()) != 0 && errno != ENOENT) {
    // Best effort: the cycle itself went well, and a stale note is only a note.
  }
  // The page stays (made while there was room), emptied.
  clearNotePage(StateDir{stateDir}.errorPage());
}

}  // namespace mesh::state
