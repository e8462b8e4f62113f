// Small RAII wrappers over the SQLite C API, private to src/state. Every failure
// becomes a SqliteError whose message names the database, what was being done and
// sqlite3_errmsg — never a bare result code.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "util/compiled_cache.hh"
#include "util/error.hh"

namespace mesh::state {

// Keeps the primary result code so that callers can tell "not a database" or
// "busy" from other failures without parsing the message.
class SqliteError : public Error {
 public:
  SqliteError(int code, const std::string& what) : Error(what), code_(code) {}
  int code() const { return code_; }  // primary code (SQLITE_NOTADB, SQLITE_BUSY, …)

 private:
  int code_;
};

class Db {
 public:
  // flags (and vfs: nullptr for the default) as for sqlite3_open_v2; never creates
  // a file unless SQLITE_OPEN_CREATE is given.
  Db(const std::string& path, int flags, const char* vfs = nullptr);
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  ~Db();

  sqlite3* get() const { return db_; }
  const std::string& path() const { return path_; }

  // Runs one or more statements with no result rows.
  void exec(const char* sql, std::string_view purpose);
  // Runs a statement whose single row holds one integer, e.g. "PRAGMA user_version".
  int64_t queryInt(const char* sql, const char* purpose);
  std::string queryText(const char* sql, const char* purpose);
  // Fills the value at `column` of row `rowid` in `table`, made as zeroblob(size),
  // with what `write` writes (util/compiled_cache.hh's FormWriter: asked its size
  // first, then handed a sink), a piece at a time through SQLite's incremental
  // I/O: bound whole instead, SQLite copies a value and then builds a record of
  // the copy, two more of it in memory. Fails when `write` writes other than `size`.
  void fillBlob(const char* table, const char* column, int64_t rowid, size_t size,
                const FormWriter& write, std::string_view purpose);

  // Throws the SqliteError for result code rc while `purpose` was being done,
  // or, for SQLITE_CORRUPT once onCorrupt is set, whatever that throws.
  [[noreturn]] void fail(int rc, std::string_view purpose) const;
  // Called with the purpose and sqlite3_errmsg when any statement meets a
  // damaged page, wherever it is (a cycle's own row, owed restarts, history); it
  // throws the store's "is damaged; move it aside" error. Set once the file is
  // known to be ours: before that, a corrupt file may be someone else's.
  using CorruptHandler = std::function<void(std::string_view purpose, const std::string& why)>;
  void onCorrupt(CorruptHandler f) { onCorrupt_ = std::move(f); }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
  CorruptHandler onCorrupt_;
};

// A FormWriter of bytes held whole (Db::fillBlob's writer for a value already in memory).
inline FormWriter writerOf(std::string_view bytes) {
  return [bytes](const std::function<void(std::string_view)>& sink) {
    if (sink) sink(bytes);
    return bytes.size();
  };
}

class Query;

// A prepared statement, kept for the life of the store so hot paths skip parsing.
class Stmt {
 public:
  Stmt(Db& db, const char* sql, const char* purpose);
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt();

  // Starts one use: bindings come in order, and the statement is reset when the
  // Query ends so that no read transaction outlives it.
  Query start();

 private:
  friend class Query;
  Db& db_;
  sqlite3_stmt* stmt_ = nullptr;
  const char* purpose_;
};

class Query {
 public:
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;
  ~Query();

  Query& bind(std::string_view text);
  Query& bind(int64_t value);
  Query& bindNull();
  Query& bindBlob(std::string_view bytes);

  // Steps once: true when a row is available.
  bool next();
  // Steps until done; for statements that return no rows.
  void run();

  int64_t integer(int col) const { return sqlite3_column_int64(stmt_.stmt_, col); }
  std::string text(int col) const;
  // The column's text in SQLite's row buffer: valid until the next step.
  std::string_view textView(int col) const;
  std::string blob(int col) const;

 private:
  friend class Stmt;
  explicit Query(Stmt& s) : stmt_(s) {}
  Stmt& stmt_;
  int nextParam_ = 1;
};

}  // namespace mesh::state
