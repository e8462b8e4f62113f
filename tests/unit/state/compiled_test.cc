// The compiled declaration as the store keeps it (state/store/compiled.cc): put
// whole or as its writer makes it, read back the same bytes, whole or a piece at
// a time, and written without SQLite holding a copy of it; a generation's text
// (state/store/generations.cc), written the same way.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

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

// A writer handing over `form` in pieces of `piece` bytes, saying it is `said` long.
FormWriter writerOf(const std::string& form, size_t piece, size_t said) {
  return [=](const std::function<void(std::string_view)>& sink) {
    for (size_t at = 0; sink && at < form.size(); at += piece)
      sink(std::string_view(form).substr(at, piece));
    return said;
  };
}

TEST_F(CompiledTest, AFormIsKeptAsItsWriterWritesIt) {
  const std::string form = formOf((size_t{2} << 20) + 777);
  {
    auto store = Store::open(dir);
    store.putCompiledDeclaration("sha256:key", writerOf(form, 100003, form.size()));
  }
  EXPECT_EQ(Store::peekCompiledDeclaration(dir, "sha256:key"), form);
}

// A writer that writes less or more than it said is not followed: the form
// there before stays, and nothing is thrown (it is only a cache).
TEST_F(CompiledTest, AWriterThatWritesOtherThanItSaidKeepsNothingAndLeavesTheFormBefore) {
  const std::string form = formOf(4096);
  {
    auto store = Store::open(dir);
    store.putCompiledDeclaration("sha256:old", "the form before");
    EXPECT_NO_THROW(store.putCompiledDeclaration("sha256:short", writerOf(form, 1000, 5000)));
    EXPECT_NO_THROW(store.putCompiledDeclaration("sha256:long", writerOf(form, 1000, 3000)));
  }
  EXPECT_EQ(Store::peekCompiledDeclaration(dir, "sha256:short"), std::nullopt);
  EXPECT_EQ(Store::peekCompiledDeclaration(dir, "sha256:long"), std::nullopt);
  EXPECT_EQ(Store::peekCompiledDeclaration(dir, "sha256:old"), "the form before");
}

// Bound whole, the text of 100,000 files (18 MB) was copied by SQLite and again
// into a record of the copy: the first apply's peak.
TEST_F(CompiledTest, RecordingAGenerationHoldsNoCopyOfItsTextAndReadsItBackAsItWas) {
  std::string text = formOf(size_t{16} << 20);
  for (auto& c : text) c = static_cast<char>('a' + static_cast<unsigned char>(c) % 26);
  auto store = Store::open(dir);
  sqlite3_int64 now = 0, highest = 0;
  ASSERT_EQ(sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &now, &highest, /*reset=*/1), SQLITE_OK);
  const int64_t g = store.recordGeneration("sha256:" + std::string(64, 'c'), text, 1000);
  ASSERT_EQ(sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &now, &highest, 0), SQLITE_OK);
  if (highest != 0) {
    EXPECT_LT(static_cast<size_t>(highest), text.size() / 2);
  }
  EXPECT_EQ(store.generationText(g), text);
}

}  // namespace
}  // namespace mesh::state
