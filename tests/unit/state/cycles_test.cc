// Cycle numbering and declaration generations.
#include <gtest/gtest.h>

#include <filesystem>

#include "state/store.hh"
#include "state_test.hh"
#include "util/error.hh"

namespace mesh::state {
namespace {

using testing::RawDb;
using CyclesTest = testing::StateTest;

TEST_F(CyclesTest, NumbersStartAtOneIncreaseAndSurviveReopen) {
  {
    auto store = Store::open(dir);
    EXPECT_EQ(store.cycleCount(), 0);
    EXPECT_FALSE(store.lastCycle());
    EXPECT_EQ(store.beginCycle(1000, 0), 1);
    EXPECT_EQ(store.beginCycle(2000, 0), 2);
  }
  auto store = Store::open(dir);
  EXPECT_EQ(store.beginCycle(3000, 0), 3);
  EXPECT_EQ(store.cycleCount(), 3);
}

TEST_F(CyclesTest, BeginThenFinishIsWhatLastCycleShows) {
  auto store = Store::open(dir);
  int64_t gen = store.recordGeneration("sha256:d1", "node = \"a\"\n", 500);
  int64_t n = store.beginCycle(1000, gen);
  auto running = store.lastCycle();
  ASSERT_TRUE(running);
  EXPECT_EQ(running->cycle, n);
  EXPECT_EQ(running->startedAt, 1000);
  EXPECT_EQ(running->finishedAt, 0) << "a running (or crashed) cycle has no finish time";
  EXPECT_EQ(running->generation, gen);

  Cycle done{.cycle = n,
             .startedAt = 1000,
             .finishedAt = 1008,
             .generation = gen,
             .tally = {.created = 1,
                       .updated = 2,
                       .unchanged = 12,
                       .removed = 3,
                       .released = 5,
                       .skipped = 6,
                       .failed = 4},
             .ms = 8};
  store.finishCycle(done);
  EXPECT_EQ(store.lastCycle()->finishedAt, 1008);
  auto last = store.lastCycle();
  EXPECT_EQ(last->tally, done.tally) << "every outcome's count, released and skipped too";
  EXPECT_EQ(last->ms, 8);
}

TEST_F(CyclesTest, FinishingACycleNeverBegunIsAnError) {
  auto store = Store::open(dir);
  Cycle never;
  never.cycle = 5;
  EXPECT_THROW(store.finishCycle(never), Error);
}

TEST_F(CyclesTest, NumbersNeverRepeatEvenWhenNewestRowsAreDeleted) {
  {
    auto store = Store::open(dir);
    store.beginCycle(1, 0);
    store.beginCycle(2, 0);
  }
  { RawDb(db).exec("DELETE FROM cycles"); }
  auto store = Store::open(dir);
  EXPECT_EQ(store.beginCycle(3, 0), 3);
}

TEST_F(CyclesTest, RolledBackCycleIsNotCounted) {
  auto store = Store::open(dir);
  {
    Store::Txn txn(store);
    store.beginCycle(1, 0);
  }
  EXPECT_EQ(store.cycleCount(), 0);
}

TEST_F(CyclesTest, GenerationsDedupeByDigest) {
  auto store = Store::open(dir);
  int64_t a = store.recordGeneration("sha256:aa", "text a", 100);
  int64_t b = store.recordGeneration("sha256:bb", "text b", 200);
  int64_t again = store.recordGeneration("sha256:aa", "text a", 300);
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 2);
  EXPECT_EQ(again, a);

  auto gens = store.generations();
  ASSERT_EQ(gens.size(), 2u);
  EXPECT_EQ(gens[0].generation, a);
  EXPECT_EQ(gens[0].digest, "sha256:aa");
  EXPECT_EQ(gens[0].firstAppliedAt, 100);
  EXPECT_EQ(gens[0].lastAppliedAt, 300);
  EXPECT_EQ(gens[1].firstAppliedAt, 200);
  EXPECT_EQ(gens[1].lastAppliedAt, 200);

  EXPECT_EQ(store.generationText(a), "text a");
  EXPECT_EQ(store.generationText(b), "text b");
  EXPECT_FALSE(store.generationText(99));
}

TEST_F(CyclesTest, GenerationNumbersSurviveReopen) {
  { Store::open(dir).recordGeneration("sha256:aa", "a", 1); }
  auto store = Store::open(dir);
  EXPECT_EQ(store.recordGeneration("sha256:aa", "a", 2), 1);
  EXPECT_EQ(store.recordGeneration("sha256:cc", "c", 3), 2);
}

TEST_F(CyclesTest, GenerationsKeepWhereTheirDeclarationCameFrom) {
  auto store = Store::open(dir);
  const int64_t a = store.recordGeneration("sha256:aa", "a", 1, "decl.toml", "/srv/decls");
  EXPECT_EQ(store.recordGeneration("sha256:aa", "a", 2, "", ""), a);  // unknown: kept
  auto g = store.generationDeclaration(a);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->text, "a");
  EXPECT_EQ(g->source, "decl.toml");
  EXPECT_EQ(g->baseDir, "/srv/decls");
  store.recordGeneration("sha256:aa", "a", 3, "/etc/m/decl.toml", "/etc/m");  // latest wins
  EXPECT_EQ(store.generations()[0].source, "/etc/m/decl.toml");
  EXPECT_EQ(store.generations()[0].baseDir, "/etc/m");
  EXPECT_FALSE(store.generationDeclaration(99));
}

TEST_F(CyclesTest, CyclesNewestFirst) {
  auto store = Store::open(dir);
  for (int64_t i = 1; i <= 3; ++i) store.beginCycle(i * 1000, 0);
  auto two = store.cycles(2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].cycle, 3);
  EXPECT_EQ(two[1].cycle, 2);
  EXPECT_EQ(store.cycles(0).size(), 3u);
}

// A generation is as good as its newest finished cycle: failed resources there
// mark it failed, a cycle that never finished does not count, and a later cycle
// that converges makes it good again.
TEST_F(CyclesTest, AGenerationIsAsGoodAsItsNewestFinishedCycle) {
  auto store = Store::open(dir);
  const int64_t a = store.recordGeneration("sha256:a", "a", 1);
  const int64_t b = store.recordGeneration("sha256:b", "b", 2);
  const int64_t c = store.recordGeneration("sha256:c", "c", 3);
  auto run = [&](int64_t gen, int64_t failed, bool finish) {
    const int64_t n = store.beginCycle(10, gen);
    if (finish)
      store.finishCycle({.cycle = n,
                         .startedAt = 10,
                         .finishedAt = 11,
                         .generation = gen,
                         .tally = {.failed = failed}});
    return n;
  };
  run(a, 0, true);
  const int64_t bFailed = run(b, 2, true);
  run(c, 0, false);  // cut short
  auto gens = store.generations();
  ASSERT_EQ(gens.size(), 3u);
  EXPECT_TRUE(gens[0].good());
  EXPECT_FALSE(gens[1].good());
  EXPECT_EQ(gens[1].lastCycle, bFailed);
  EXPECT_EQ(gens[1].lastFailed, 2);
  EXPECT_FALSE(gens[2].good());
  EXPECT_EQ(gens[2].lastCycle, 0) << "no cycle of it finished";

  const int64_t bFixed = run(b, 0, true);
  run(b, 0, false);  // a later one cut short changes nothing
  gens = store.generations();
  EXPECT_TRUE(gens[1].good());
  EXPECT_EQ(gens[1].lastCycle, bFixed);
}

TEST_F(CyclesTest, LastFinishedCycleSkipsOneRunningOrCutShort) {
  auto store = Store::open(dir);
  EXPECT_FALSE(store.lastFinishedCycle());
  const int64_t n = store.beginCycle(10, 0);
  store.finishCycle({.cycle = n, .startedAt = 10, .finishedAt = 12, .generation = 0, .tally = {}});
  store.beginCycle(20, 0);
  ASSERT_TRUE(store.lastFinishedCycle());
  EXPECT_EQ(store.lastFinishedCycle()->cycle, n);
  EXPECT_EQ(store.lastCycle()->cycle, n + 1);
}

TEST_F(CyclesTest, TheNodeNameIsTheOneTheNewestCycleRanAs) {
  {
    auto store = Store::open(dir);
    EXPECT_FALSE(store.nodeName());
    store.beginCycle(1, 0, "web-1");
    store.beginCycle(2, 0, "web-2");
    store.beginCycle(3, 0);  // a cycle that names none (an older caller)
  }
  auto ro = Store::open(dir, Store::Access::ReadOnly);
  EXPECT_EQ(ro.nodeName(), "web-2");
}

// A store made before cycles.node: a read-only open has no name to give; the
// first read-write open adds the column.
TEST_F(CyclesTest, AStoreWithoutCyclesNodeGainsIt) {
  {
    auto store = Store::open(dir);
    store.beginCycle(1, 0, "web-1");
  }
  {
    // A store from before cycles.node: of schema version 1 (the generations'
    // texts in their rows), which an open looks into for the parts added since.
    RawDb raw(dir + "/state.db");
    raw.exec(
        "ALTER TABLE cycles DROP COLUMN node;"
        "DROP TABLE generations; DROP TABLE generation_texts;"
        "CREATE TABLE generations (generation INTEGER PRIMARY KEY, digest TEXT NOT NULL UNIQUE, "
        "text TEXT NOT NULL, first_applied_at INTEGER NOT NULL, last_applied_at INTEGER NOT "
        "NULL, source TEXT NOT NULL DEFAULT '', base_dir TEXT NOT NULL DEFAULT '', serial "
        "INTEGER);"
        "PRAGMA user_version = 1");
  }
  EXPECT_FALSE(Store::open(dir, Store::Access::ReadOnly).nodeName());
  auto store = Store::open(dir);
  store.beginCycle(2, 0, "web-3");
  EXPECT_EQ(store.nodeName(), "web-3");
}

TEST_F(CyclesTest, ADeclarationErrorIsNotedReadAndCleared) {
  std::filesystem::create_directories(dir);
  EXPECT_FALSE(declarationError(dir));
  noteDeclarationError(dir, {1234, "/etc/mesh/decl.toml", "decl.toml:3:9: unterminated", true});
  auto e = declarationError(dir);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->at, 1234);
  EXPECT_EQ(e->path, "/etc/mesh/decl.toml");
  EXPECT_EQ(e->message, "decl.toml:3:9: unterminated");
  EXPECT_TRUE(e->keptLastGood);
  clearDeclarationError(dir);
  EXPECT_FALSE(declarationError(dir));
  // Into an existing state directory only.
  noteDeclarationError(dir + "/missing", {1, "x", "y", false});
  EXPECT_FALSE(std::filesystem::exists(dir + "/missing"));
}

}  // namespace
}  // namespace mesh::state
