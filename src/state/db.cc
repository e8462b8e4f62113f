#include "state/db.hh"

#include <cstring>

#include "util/fd.hh"

namespace mesh::state {

namespace {

// SQLite reports the OS error behind "unable to open database file" separately;
// it is often the only clue (permission denied, no such directory).
std::string describe(sqlite3* db, int rc) {
  std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  int sys = db ? sqlite3_system_errno(db) : 0;
  if (sys != 0 && (rc & 0xff) == SQLITE_CANTOPEN) msg += fmt::format(" ({})", std::strerror(sys));
  if ((rc & 0xff) == SQLITE_BUSY)
    msg += " (another mesh-host kept the store busy for longer than the 10 s busy timeout)";
  return msg;
}

}  // namespace

Db::Db(const std::string& path, int flags, const char* vfs) : path_(path) {
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_EXRESCODE, vfs);
  if (rc != SQLITE_OK) {
    std::string msg = describe(db_, rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw SqliteError(rc & 0xff, fmt::format("cannot open state store {}: {}", path, msg));
  }
}

Db::~Db() {
  // close_v2 defers the close until every statement is finalized, so member order
  // in the owner cannot turn into a leak.
  sqlite3_close_v2(db_);
}

void Db::fail(int rc, std::string_view purpose) const {
  const std::string why = describe(db_, rc);
  if ((rc & 0xff) == SQLITE_CORRUPT && onCorrupt_) onCorrupt_(purpose, why);
  throw SqliteError(rc & 0xff, fmt::format("state store {}: {} failed: {}", path_, purpose, why));
}

void Db::exec(const char* sql, std::string_view purpose) {
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(rc, purpose);
}

int64_t Db::queryInt(const char* sql, const char* purpose) {
  Stmt s(*this, sql, purpose);
  auto q = s.start();
  if (!q.next()) throw Error("state store {}: {} returned no row", path_, purpose);
  return q.integer(0);
}

std::string Db::queryText(const char* sql, const char* purpose) {
  Stmt s(*this, sql, purpose);
  auto q = s.start();
  if (!q.next()) throw Error("state store {}: {} returned no row", path_, purpose);
  return q.text(0);
}

Stmt::Stmt(Db& db, const char* sql, const char* purpose) : db_(db), purpose_(purpose) {
  // PERSISTENT: these statements live as long as the store, which tells SQLite's
  // allocator not to take them from the short-lived lookaside pool.
  int rc = sqlite3_prepare_v3(db.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  if (rc != SQLITE_OK) db.fail(rc, purpose);
}

Stmt::~Stmt() {
  sqlite3_finalize(stmt_);
}

Query Stmt::start() {
  return Query(*this);
}

Query::~Query() {
  sqlite3_reset(stmt_.stmt_);
  sqlite3_clear_bindings(stmt_.stmt_);
}

Query& Query::bind(std::string_view text) {
  int rc = sqlite3_bind_text(stmt_.stmt_, nextParam_++, text.data(), static_cast<int>(text.size()),
                             SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) stmt_.db_.fail(rc, stmt_.purpose_);
  return *this;
}

Query& Query::bindBlob(std::string_view bytes) {
  int rc =
      sqlite3_bind_blob64(stmt_.stmt_, nextParam_++, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) stmt_.db_.fail(rc, stmt_.purpose_);
  return *this;
}

void Db::fillBlob(const char* table, const char* column, int64_t rowid, size_t size,
                  const FormWriter& write, std::string_view purpose) {
  sqlite3_blob* blob = nullptr;
  const int opened = sqlite3_blob_open(db_, "main", table, column, rowid, 1, &blob);
  // Closed before the caller commits, which an open handle would hold up.
  Finally close([&] { sqlite3_blob_close(blob); });
  if (opened != SQLITE_OK) fail(opened, purpose);
  size_t at = 0;
  auto sink = [&](std::string_view piece) {
    // A writer that writes more than it said is refused, not followed past the value.
    if (piece.size() > size - at) fail(SQLITE_TOOBIG, purpose);
    const int rc = sqlite3_blob_write(blob, piece.data(), static_cast<int>(piece.size()),
                                      static_cast<int>(at));
    if (rc != SQLITE_OK) fail(rc, purpose);
    at += piece.size();
  };
  if (write(sink) != size || at != size) fail(SQLITE_MISMATCH, purpose);
}

Query& Query::bind(int64_t value) {
  int rc = sqlite3_bind_int64(stmt_.stmt_, nextParam_++, value);
  if (rc != SQLITE_OK) stmt_.db_.fail(rc, stmt_.purpose_);
  return *this;
}

Query& Query::bindNull() {
  int rc = sqlite3_bind_null(stmt_.stmt_, nextParam_++);
  if (rc != SQLITE_OK) stmt_.db_.fail(rc, stmt_.purpose_);
  return *this;
}

bool Query::next() {
  int rc = sqlite3_step(stmt_.stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  stmt_.db_.fail(rc, stmt_.purpose_);
}

void Query::run() {
  while (next()) {
  }
}

std::string Query::text(int col) const {
  // text before bytes: the documented order that keeps the pointer valid.
  auto p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_.stmt_, col));
  int n = sqlite3_column_bytes(stmt_.stmt_, col);
  return p ? std::string(p, static_cast<size_t>(n)) : std::string();
}

}  // namespace mesh::state

namespace mesh::state {

std::string_view Query::textView(int col) const {
  auto p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_.stmt_, col));
  int n = sqlite3_column_bytes(stmt_.stmt_, col);
  return p ? std::string_view(p, static_cast<size_t>(n)) : std::string_view();
}

std::string Query::blob(int col) const {
  // blob before bytes: the documented order that keeps the pointer valid.
  auto p = static_cast<const char*>(sqlite3_column_blob(stmt_.stmt_, col));
  int n = sqlite3_column_bytes(stmt_.stmt_, col);
  return p ? std::string(p, static_cast<size_t>(n)) : std::string();
}

}  // namespace mesh::state
