// Shared fixture for the state store tests: a fresh temp dir per test, and a raw
// SQLite handle to look at (or tamper with) the file behind the store's back.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include "../../support/temp_dir.hh"

namespace mesh::state::testing {

class StateTest : public ::testing::Test {
 protected:
  mesh::test::TempDir tmp{"mesh-state-test"};
  std::string root = tmp.path;  // the temp dir; `dir` inside it is not created up front
  std::string dir = root + "/state";
  std::string db = dir + "/state.db";
};

// A direct connection; fails the test rather than throwing.
class RawDb {
 public:
  explicit RawDb(const std::string& path, int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) {
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db_, flags, nullptr), SQLITE_OK);
  }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;
  ~RawDb() { sqlite3_close_v2(db_); }

  void exec(const std::string& sql) {
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
        << sql << ": " << (err ? err : "");
    sqlite3_free(err);
  }
  std::string text(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    std::string out;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
    if (st && sqlite3_step(st) == SQLITE_ROW) {
      auto p = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
      out = p ? p : "";
    }
    sqlite3_finalize(st);
    return out;
  }
  int64_t integer(const std::string& sql) { return std::stoll(text(sql)); }
  // Column `col` of every row, joined with " | " (for EXPLAIN QUERY PLAN).
  std::string rows(const std::string& sql, int col) {
    sqlite3_stmt* st = nullptr;
    std::string out;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
    while (st && sqlite3_step(st) == SQLITE_ROW) {
      auto p = reinterpret_cast<const char*>(sqlite3_column_text(st, col));
      out += std::string(out.empty() ? "" : " | ") + (p ? p : "");
    }
    sqlite3_finalize(st);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace mesh::state::testing
