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

JournalPtr open(const std::string& directory) {
  sd_journal* raw = nullptr;
  const int r = directory.empty() ? sd_journal_open(&raw, SD_JOURNAL_LOCAL_ONLY | SD_JOURNAL_SYSTEM)
                                  : sd_journal_open_directory(&raw, directory.c_str(), 0);
  return JournalPtr(r < 0 ? nullptr : raw);
}

// A field's value at the current entry; nullopt when the entry has none.
std::optional<std::string_view> field(sd_journal* j, const char* name) {
  const void* data = nullptr;
  size_t n = 0;
  if (sd_journal_get_data(j, name, &data, &n) < 0) return std::nullopt;
  std::string_view value(static_cast<const char*>(data), n);
  const size_t eq = value.find('=');
  if (eq == std::string_view::npos) return std::nullopt;
  value.remove_prefix(eq + 1);
  return value;
}

// Calls `look` until it finds something, waiting for the journal to change
// between looks, until `deadline`.
template <class Look>
auto lookUntil(sd_journal* j, std::chrono::steady_clock::time_point deadline, Look look)
    -> decltype(look()) {
  // Watch for changes before the first look, so that an entry written between
  // the look and the wait still ends the wait.
  if (sd_journal_get_fd(j) < 0) return std::nullopt;
  for (;;) {
    if (auto found = look()) return found;
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    if (sd_journal_wait(j, static_cast<uint64_t>(left.count())) < 0) return std::nullopt;
  }
}

// The first matching "Main process exited" entry since `run` started (of its
// invocation, when known).
std::optional<Exit> firstExit(sd_journal* j, const Run& run) {
  if (sd_journal_seek_realtime_usec(j, run.sinceUs) < 0) return std::nullopt;
  while (sd_journal_next(j) > 0) {
    if (!run.invocationId.empty()) {
      auto id = field(j, "INVOCATION_ID");
      if (id && *id != run.invocationId) continue;
    }
    auto code = field(j, "EXIT_CODE");
    auto status = field(j, "EXIT_STATUS");
    if (!code || !status) continue;
    Exit e{std::string(*code), 0};
    try {
      e.status = std::stoi(std::string(*status));
    } catch (const std::exception&) {
      continue;
    }
    return e;
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
  JournalPtr j = open(directory);
  if (!j) return std::nullopt;
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
  return lookUntil(j.get(), deadline, [&] { return lastMessage(j.get(), run.sinceUs); });
}

std::optional<Exit> exitOf(const std::string& directory, const std::string& unit, const Run& run,
                           std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  JournalPtr j = open(directory);
  if (!j) return std::nullopt;
  // Written by systemd itself: _PID is a field journald sets, never the sender;
  // UNIT= and the rest any local process could send.
  if (!addMatch(j.get(), "_PID=1") ||
      !addMatch(j.get(), "MESSAGE_ID=98e322203f7a4ed290d09fe03c09fe15") ||
      !addMatch(j.get(), "UNIT=" + unit) || !addMatch(j.get(), "COMMAND=ExecStart"))
    return std::nullopt;
  return lookUntil(j.get(), deadline, [&] { return firstExit(j.get(), run); });
}

}  // namespace mesh::supervise::sdjournal
