#include "supervise/systemd/journal.hh"

#include <systemd/sd-journal.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

namespace mesh::supervise::sdjournal {

namespace {

struct JournalClose {
  void operator()(sd_journal* j) const { sd_journal_close(j); }
};
using JournalPtr = std::unique_ptr<sd_journal, JournalClose>;

// How many entries of the run to look back past empty lines.
constexpr int kLookBack = 64;

bool addMatch(sd_journal* j, const std::string& match) {
  return sd_journal_add_match(j, match.data(), match.size()) >= 0;
}

// The last non-empty MESSAGE among the matching entries written since the run
// started; nullopt when none.
std::optional<std::string> lastMessage(sd_journal* j, uint64_t sinceUs) {
  if (sd_journal_seek_tail(j) < 0) return std::nullopt;
  for (int k = 0; k < kLookBack && sd_journal_previous(j) > 0; ++k) {
    uint64_t at = 0;
    if (sd_journal_get_realtime_usec(j, &at) < 0 || at < sinceUs) break;
    const void* data = nullptr;
    size_t n = 0;
    if (sd_journal_get_data(j, "MESSAGE", &data, &n) < 0) continue;
    std::string_view field(static_cast<const char*>(data), n);
    field.remove_prefix(std::string_view("MESSAGE=").size());
    while (!field.empty() && (field.back() == '\n' || field.back() == '\r')) field.remove_suffix(1);
    if (!field.empty()) return std::string(field);
  }
  return std::nullopt;
}

}  // namespace

std::string journalDirectory(const std::string& configured) {
  if (!configured.empty()) return configured;
  const char* env = std::getenv("MESH_HOST_JOURNAL_DIR");
  return env ? env : "";
}

std::optional<std::string> lastLine(const std::string& directory, const std::string& unit,
                                    const Run& run, std::chrono::milliseconds wait) {
  if (run.invocationId.empty() && run.mainPid == 0) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  sd_journal* raw = nullptr;
  const int r = directory.empty() ? sd_journal_open(&raw, SD_JOURNAL_LOCAL_ONLY | SD_JOURNAL_SYSTEM)
                                  : sd_journal_open_directory(&raw, directory.c_str(), 0);
  if (r < 0) return std::nullopt;
  JournalPtr j(raw);
  // (unit AND invocation id) OR (unit AND main pid): fields of one term are
  // ANDed, terms ORed (sd_journal_add_disjunction).
  bool termed = false;
  auto term = [&](const std::string& match) {
    if (termed && sd_journal_add_disjunction(j.get()) < 0) return false;
    termed = true;
    return addMatch(j.get(), "_SYSTEMD_UNIT=" + unit) && addMatch(j.get(), match);
  };
  if (!run.invocationId.empty() && !term("_SYSTEMD_INVOCATION_ID=" + run.invocationId))
    return std::nullopt;
  if (run.mainPid != 0 && !term("_PID=" + std::to_string(run.mainPid))) return std::nullopt;
  // Watch for changes before the first look, so that an entry written between
  // the look and the wait still ends the wait.
  if (sd_journal_get_fd(j.get()) < 0) return std::nullopt;
  for (;;) {
    if (auto line = lastMessage(j.get(), run.sinceUs)) return line;
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    if (sd_journal_wait(j.get(), static_cast<uint64_t>(left.count())) < 0) return std::nullopt;
  }
}

}  // namespace mesh::supervise::sdjournal
