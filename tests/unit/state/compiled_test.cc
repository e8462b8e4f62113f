// The compiled declaration as the store keeps it (state/store/compiled.cc): put
// whole, read back the same bytes, whole or a piece at a time, and written
// without SQLite holding a copy of it.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "state/store.hh"
#include "state_test.hh"

namespace mesh::state {
namespace {

using CompiledTest = testing::StateTest;

// Bytes of every value, no two MiB alike: a form SQLite cannot store any smaller.
std::string formOf(size_t size) {
  std::string form(size, '\0');
  uint32_t x = 2463534242u;
  for (auto& c : form) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x);
  }
  return form;
}

TEST_F(CompiledTest, AFormIsReadBackAsPut) {
  const std::string form = formOf((size_t{3} << 20) + 12345);  // not whole pieces
  {
    auto store = Store::open(dir);
    store.putCompiledDeclaration("sha256:old", "an older form");
    store.putCompiledDeclaration("sha256:key", form);
  }
  EXPECT_EQ(Store::peekCompiledDeclaration(dir, "sha256:key"), form);
  EXPECT_EQ(Store::peekCompiledDeclaration(dir, "sha256:old"), std::nullopt);  // replaced
  std::string pieces;
  EXPECT_TRUE(Store::readCompiledDeclaration(
      dir, "sha256:key", [&](size_t size, const Store::FormPiece& piece) {
        pieces.resize(size);
        for (size_t at = 0; at < size; at += 65536)
          ASSERT_TRUE(piece(at, pieces.data() + at, std::min<size_t>(65536, size - at)));
      }));
  EXPECT_EQ(pieces, form);
}

TEST_F(CompiledTest, AnEmptyFormIsKept) {
  {
    auto store = Store::open(dir);
    store.putCompiledDeclaration("sha256:key", "");
  }
  EXPECT_EQ(Store::peekCompiledDeclaration(dir, "sha256:key"), "");
}

// Bound whole, SQLite copied the form and built a record of the copy: at
// 100,000 files, 44 MB of the first apply's peak beside the form itself.
TEST_F(CompiledTest, PuttingAFormHoldsNoCopyOfIt) {
  const std::string form = formOf(size_t{16} << 20);
  auto store = Store::open(dir);
  sqlite3_int64 now = 0, highest = 0;
  ASSERT_EQ(sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &now, &highest, /*reset=*/1), SQLITE_OK);
  store.putCompiledDeclaration("sha256:key", form);
  ASSERT_EQ(sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &now, &highest, 0), SQLITE_OK);
  if (highest == 0) GTEST_SKIP() << "this SQLite keeps no memory statistics";
  EXPECT_LT(static_cast<size_t>(highest), form.size() / 2);
}

}  // namespace
}  // namespace mesh::state
