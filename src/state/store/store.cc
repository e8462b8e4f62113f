#include "state/store.hh"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <climits>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <tuple>

#include "state/note_page.hh"
#include "state/records.hh"
#include "state/stop_note.hh"
#include "state/store/impl.hh"
#include "util/fd.hh"
#include "util/fs.hh"
#include "util/text_safe.hh"
#include "util/trusted_path.hh"

namespace mesh::state {

namespace {}  // namespace

Stmt& Statements::lazy(std::optional<Stmt>& slot, const char* sql, const char* purpose) {
  if (!slot) slot.emplace(db_, sql, purpose);
  return *slot;
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

namespace {}  // namespace

const std::string& Store::stateDir() const {
  return impl_->stateDir;
}

Store::Txn::Txn(Store& s, Sync sync) : store_(&s) {
  auto& impl = *s.impl_;
  if (impl.inTxn)
    throw Error("state store {}: a transaction is already open (they do not nest)", impl.db.path());
  // Set outside the transaction: SQLite refuses to change it inside one.
  if (sync == Sync::Full) {
    impl.db.exec("PRAGMA synchronous = FULL", "syncing a transaction");
    full_ = true;
  }
  // IMMEDIATE takes the write lock now, so a busy store fails (after the busy
  // timeout) here rather than halfway through a cycle's writes.
  try {
    impl.db.exec("BEGIN IMMEDIATE", "starting a transaction");
  } catch (...) {
    backToNormal();
    throw;
  }
  impl.inTxn = true;
}

void Store::Txn::backToNormal() {
  if (full_)
    sqlite3_exec(store_->impl_->db.get(), "PRAGMA synchronous = NORMAL", nullptr, nullptr, nullptr);
  full_ = false;
}

Store::Txn::~Txn() {
  if (done_) return;
  auto& impl = *store_->impl_;
  // SQLite may already have rolled back on its own (e.g. after SQLITE_FULL).
  if (!sqlite3_get_autocommit(impl.db.get()))
    sqlite3_exec(impl.db.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  impl.inTxn = false;
  impl.trimmedForCycle = 0;  // a trim inside the rolled-back transaction was undone too
  backToNormal();
}

void Store::Txn::commit() {
  if (done_) throw Error("state store transaction committed twice");
  auto& impl = *store_->impl_;
  impl.db.exec("COMMIT", "committing a transaction");
  if (full_) impl.synced();  // synchronous = FULL: the WAL was synced at the commit
  done_ = true;
  impl.inTxn = false;
  backToNormal();
}

namespace {

std::string cycleErrorPath(const std::string& stateDir) {
  return StateDir{stateDir}.lastError();
}

std::string declarationErrorPath(const std::string& stateDir) {
  return StateDir{stateDir}.declarationError();
}

}  // namespace

namespace {

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
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
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

// The file: a JSON object {at, path, message, kept_last_good}.
void noteDeclarationError(const std::string& stateDir, const DeclarationError& e) noexcept {
  try {
    if (!lstatPath(stateDir)) return;
    const nlohmann::json j = {
        {"at", e.at}, {"path", e.path}, {"message", e.message}, {"kept_last_good", e.keptLastGood}};
    atomicWrite(declarationErrorPath(stateDir), jsonData(j) + "\n", 0640);
  } catch (...) {
  }
}

std::optional<DeclarationError> declarationError(const std::string& stateDir) {
  std::optional<std::string> text;
  try {
    text = readFile(declarationErrorPath(stateDir));
  } catch (const SysError&) {
    return std::nullopt;
  }
  if (!text) return std::nullopt;
  DeclarationError e;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    e.message = "(" + declarationErrorPath(stateDir) + " is damaged)";
    return e;
  }
  e.at = j.value("at", int64_t{0});
  e.path = j.value("path", "");
  e.message = j.value("message", "");
  e.keptLastGood = j.value("kept_last_good", false);
  return e;
}

void clearDeclarationError(const std::string& stateDir) noexcept {
  (void)::unlink(declarationErrorPath(stateDir).c_str());
}

}  // namespace mesh::state
