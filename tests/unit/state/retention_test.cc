// The store's bounds (state/store/retention.hh): trimming keeps them, drops the
// texts of generations beyond them, never drops what something still needs, costs
// a bounded batch per call, survives a crash in the middle, runs only under the
// state lock, and keeps the file from growing. Real SQLite files.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "state/lock.hh"
#include "state/store.hh"
#include "state_test.hh"
#include "util/error.hh"
#include "util/faults.hh"

namespace mesh::state {
namespace {

using testing::RawDb;

constexpr int64_t kDay = int64_t{86400} * 1000;
constexpr int64_t kNow = int64_t{1'800'000'000'000};

class RetentionTest : public testing::StateTest {
 protected:
  // One applying cycle of generation `text` at `at`, as the cycle loop records it:
  // the generation and the cycle's row, then the row finished.
  int64_t cycle(Store& s, const std::string& text, int64_t at, int64_t failed = 0) {
    int64_t g = 0, c = 0;
    {
      Store::Txn txn(s);
      g = s.recordGeneration("sha256:" + text, text, at);
      c = s.beginCycle(at, g, "n");
      txn.commit();
    }
    Cycle done;
    done.cycle = c;
    done.startedAt = at;
    done.finishedAt = at + 1;
    done.generation = g;
    done.tally.failed = failed;
    s.finishCycle(done);
    return g;
  }
  // Trims until a call has nothing more to do.
  TrimReport trimAll(Store& s, const Retention& r, int64_t now = kNow) {
    TrimReport sum;
    for (bool more = true; more;) {
      auto t = s.trim(r, now);
      sum.cycles += t.cycles;
      sum.generations += t.generations;
      sum.history += t.history;
      more = t.more;
    }
    return sum;
  }
  int64_t count(const char* table) {
    return RawDb(db).integer(std::string("SELECT count(*) FROM ") + table);
  }
};

TEST_F(RetentionTest, KeepsTheLastGenerationsAndDropsTheTextsOfTheOthers) {
  auto store = Store::open(dir);
  auto lock = StateLock::acquire(dir, StateLock::Kind::Exclusive);
  for (int i = 1; i <= 120; ++i) cycle(store, "decl " + std::to_string(i), kNow - 120 + i);
  Retention r;
  r.keepGenerations = 50;
  const auto t = trimAll(store, r);
  EXPECT_EQ(t.generations, 70);
  EXPECT_EQ(count("generations"), 50);
  EXPECT_EQ(count("generation_texts"), 50);
  EXPECT_EQ(RawDb(db).integer("SELECT min(generation) FROM generations"), 71);
  EXPECT_FALSE(store.generationText(70));
  EXPECT_EQ(store.generationText(71), "decl 71");
  EXPECT_TRUE(store.generationTrimmed(12));
  EXPECT_FALSE(store.generationTrimmed(71));
  EXPECT_FALSE(store.generationTrimmed(121));  // never was
  ASSERT_TRUE(store.lastRetention());
  EXPECT_EQ(store.lastRetention()->keepGenerations, 50);
  // A new text still gets a new number: none is handed out twice.
  EXPECT_EQ(cycle(store, "decl 121", kNow), 121);
}

TEST_F(RetentionTest, EachTrimDeletesABoundedBatch) {
  auto store = Store::open(dir);
  auto lock = StateLock::acquire(dir, StateLock::Kind::Exclusive);
  for (int i = 1; i <= 300; ++i) cycle(store, "d" + std::to_string(i), kNow - 300 + i);
  Retention r;
  r.keepGenerations = 10;
  r.keepCycles = 10;
  r.batch = 16;
  const auto t = store.trim(r, kNow);
  EXPECT_EQ(t.cycles, 16);
  EXPECT_EQ(t.generations, 16);
  EXPECT_TRUE(t.more);
  trimAll(store, r);
  EXPECT_EQ(count("cycles"), 10);
  EXPECT_EQ(count("generations"), 10);
}

TEST_F(RetentionTest, CyclesAreKeptByCountAndByAgeButAlwaysTheLastFew) {
  auto store = Store::open(dir);
  auto lock = StateLock::acquire(dir, StateLock::Kind::Exclusive);
  // 200 cycles 40 days old, then 50 of today, all of one generation.
  for (int i = 0; i < 200; ++i) cycle(store, "same", kNow - 40 * kDay + i);
  for (int i = 0; i < 50; ++i) cycle(store, "same", kNow - 1000 + i);
  HistoryEntry h;
  h.cycle = 3;
  h.id = "m.f";
  h.outcome = "updated";
  h.at = 1;
  store.addHistory(h);
  Retention r;
  r.keepCycles = 1000;  // the count allows them all: age decides
  r.keepDays = 30;
  r.minCycles = 10;
  const auto t = trimAll(store, r);
  EXPECT_EQ(t.cycles, 200);
  EXPECT_EQ(t.history, 1);  // the trimmed cycle's outcomes go with it
  EXPECT_EQ(count("cycles"), 50);
  EXPECT_EQ(store.oldestCycle(), 201);
  // Everything old, yet the last minCycles stay.
  trimAll(store, r, kNow + 100 * kDay);
  EXPECT_EQ(count("cycles"), 10);
  // And the count bound alone.
  r.keepCycles = 4;
  trimAll(store, r, kNow);
  EXPECT_EQ(count("cycles"), 4);
  EXPECT_EQ(store.oldestCycle(), 247);
}

TEST_F(RetentionTest, GenerationsOlderThanTheAgeGoButNeverTheLastFew) {
  auto store = Store::open(dir);
  auto lock = StateLock::acquire(dir, StateLock::Kind::Exclusive);
  for (int i = 1; i <= 20; ++i) cycle(store, "g" + std::to_string(i), kNow - 60 * kDay + i);
  Retention r;
  r.keepGenerations = 50;
  r.keepDays = 30;
  r.minGenerations = 5;
  trimAll(store, r);
  EXPECT_EQ(RawDb(db).rows("SELECT generation FROM generations ORDER BY 1", 0),
            "16 | 17 | 18 | 19 | 20");
}

// Never dropped: the current generation after a rollback to an old one, the last
// good one before it (what `rollback` without a number applies), the highest
// serial's (the replay guard), the one a pending restart's cycle applied, the
// last finished cycle's (the fleet's applied digest) while a newer cycle is cut short.
TEST_F(RetentionTest, WhatSomethingStillNeedsSurvivesTrimming) {
  auto store = Store::open(dir);
  auto lock = StateLock::acquire(dir, StateLock::Kind::Exclusive);
  cycle(store, "good 1", kNow - 100);                                        // 1: good
  cycle(store, "bad 2", kNow - 99, /*failed=*/1);                            // 2: failed
  store.recordGeneration("sha256:serial", "serial", kNow - 98, "", "", 41);  // 3: serial 41
  const int64_t owedIn = [&] {
    cycle(store, "owing 4", kNow - 97);  // 4: a restart owed in its cycle
    return store.lastCycle()->cycle;
  }();
  OwedRestart owed;
  owed.process = "m.p";
  owed.cause = "m.f";
  owed.cycle = owedIn;
  owed.at = kNow - 97;
  store.oweRestart(owed);
  for (int i = 5; i <= 60; ++i) cycle(store, "g" + std::to_string(i), kNow - 100 + i);
  cycle(store, "g6", kNow);  // a rollback to an old generation: 6 applied again
  ASSERT_EQ(store.lastCycle()->generation, 6);
  // Then a cycle of generation 20 cut short: the last finished one applied 6.
  store.beginCycle(kNow + 1, 20, "n");
  Retention r;
  r.keepGenerations = 3;
  r.keepCycles = 2;
  trimAll(store, r);
  // 3 serial, 4 owed, 6 last finished, 19 the last good before the current 20,
  // 58-60 the newest three.
  EXPECT_EQ(RawDb(db).rows("SELECT generation FROM generations ORDER BY 1", 0),
            "3 | 4 | 6 | 19 | 20 | 58 | 59 | 60");
  EXPECT_TRUE(store.generationText(4));
  EXPECT_EQ(store.highestSerial()->generation, 3);
  // The owed restart's cycle row stays, and so it is still paid.
  EXPECT_EQ(RawDb(db).integer(fmt::format("SELECT count(*) FROM cycles WHERE cycle = {}", owedIn)),
            1);
  EXPECT_EQ(store.owedRestarts().size(), 1u);
  // The health of a kept generation outlives its cycles.
  for (const auto& g : store.generations()) {
    if (g.generation == 19 || g.generation == 6) {
      EXPECT_TRUE(g.good()) << g.generation;
    }
  }
  // Nothing else is needed: once the restart is paid, 4 goes.
  store.clearOwedRestarts("m.p");
  trimAll(store, r);
  EXPECT_EQ(RawDb(db).rows("SELECT generation FROM generations ORDER BY 1", 0),
            "3 | 6 | 19 | 20 | 58 | 59 | 60");
}

TEST_F(RetentionTest, TheLastGoodGenerationBeforeTheCurrentSurvives) {
  auto store = Store::open(dir);
  auto lock = StateLock::acquire(dir, StateLock::Kind::Exclusive);
  cycle(store, "good", kNow - 100);  // 1
  for (int i = 2; i <= 30; ++i) cycle(store, "bad" + std::to_string(i), kNow - 100 + i, 1);
  Retention r;
  r.keepGenerations = 2;
  trimAll(store, r);
  EXPECT_EQ(RawDb(db).rows("SELECT generation FROM generations ORDER BY 1", 0), "1 | 29 | 30");
}

// A kill in the middle of a trim (its rows deleted, not committed) leaves the
// store as it was, consistent; the next trim does the work.
TEST_F(RetentionTest, AKillMidTrimLeavesAConsistentStore) {
  {
    auto store = Store::open(dir);
    for (int i = 1; i <= 80; ++i) cycle(store, "d" + std::to_string(i), kNow - 80 + i);
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    setCrashHook([](const char* name) {
      if (std::string(name) == crash::kMidTrim) ::_exit(kCrashExitCode);
    });
    auto lock = StateLock::acquire(dir, StateLock::Kind::Exclusive);
    auto store = Store::open(dir);
    Retention r;
    r.keepGenerations = 10;
    r.keepCycles = 10;
    (void)store.trim(r, kNow);
    ::_exit(0);  // the crash point was not reached
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), kCrashExitCode);
  EXPECT_EQ(RawDb(db).text("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(count("generations"), 80);
  EXPECT_EQ(count("generation_texts"), 80);
  EXPECT_EQ(count("cycles"), 80);
  auto lock = StateLock::acquire(dir, StateLock::Kind::Exclusive);
  auto store = Store::open(dir);
  Retention r;
  r.keepGenerations = 10;
  r.keepCycles = 10;
  trimAll(store, r);
  EXPECT_EQ(count("generations"), 10);
  EXPECT_EQ(count("generation_texts"), 10);
  EXPECT_EQ(RawDb(db).text("PRAGMA integrity_check"), "ok");
}

// Trimming runs only under the state lock, which nobody but the state directory's
// owner can take; a reader in the middle of a read (as `status` is) holds it up not.
TEST_F(RetentionTest, TrimsOnlyUnderTheStateLockAndNoReaderHoldsItUp) {
  auto store = Store::open(dir);
  for (int i = 1; i <= 20; ++i) cycle(store, "d" + std::to_string(i), kNow - 20 + i);
  Retention r;
  r.keepGenerations = 5;
  try {
    (void)store.trim(r, kNow);
    ADD_FAILURE() << "a trim without the state lock ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("trimming needs the state lock held"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(count("generations"), 20);

  auto reader = Store::open(dir, Store::Access::ReadOnly);
  RawDb raw(db, SQLITE_OPEN_READONLY);
  raw.exec("BEGIN");
  EXPECT_EQ(raw.integer("SELECT count(*) FROM generations"), 20);  // a read snapshot held
  auto lock = StateLock::acquire(dir, StateLock::Kind::Exclusive);
  const auto start = std::chrono::steady_clock::now();
  const auto t = trimAll(store, r);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(t.generations, 15);
  EXPECT_EQ(raw.integer("SELECT count(*) FROM generations"), 20);  // its snapshot still
  raw.exec("COMMIT");
  EXPECT_EQ(reader.generations().size(), 5u);
}

// The file levels off: a declaration of 16 KiB edited 600 times, trimmed as the
// cycles go, takes no more room at the end than half-way through.
TEST_F(RetentionTest, TheFileStopsGrowing) {
  auto store = Store::open(dir);
  auto lock = StateLock::acquire(dir, StateLock::Kind::Exclusive);
  Retention r;
  r.keepGenerations = 20;
  auto sizeNow = [&] {
    struct stat st {};
    ::stat(db.c_str(), &st);
    return st.st_size;
  };
  off_t half = 0;
  for (int i = 1; i <= 600; ++i) {
    cycle(store, std::to_string(i) + std::string(16384, 'x'), kNow - 600 + i);
    (void)store.trim(r, kNow);
    if (i == 300) half = sizeNow();
  }
  const off_t end = sizeNow();
  EXPECT_GT(half, 20 * 16384);
  EXPECT_LE(end, half + half / 10) << "half-way " << half << " bytes, at the end " << end;
  EXPECT_EQ(count("generation_texts"), 20);
}

// A store of schema version 2, made by the schema of that version
// (fixtures/schema-v2.sql, the schema.sql it had), migrates in place on the first
// read-write open: each generation keeps the health its cycles gave it, and the
// file gets incremental vacuum.
TEST_F(RetentionTest, AVersion2StoreMigratesInPlace) {
  std::ifstream in(MESH_STATE_FIXTURES "/schema-v2.sql");
  std::stringstream sql;
  sql << in.rdbuf();
  ASSERT_NE(sql.str().find("schema version 2"), std::string::npos);
  std::filesystem::create_directories(dir);
  {
    RawDb raw(db);
    raw.exec("PRAGMA journal_mode = WAL");
    raw.exec(sql.str());
    raw.exec(
        "PRAGMA application_id = 1296388936; PRAGMA user_version = 2;"
        "INSERT INTO generations (generation, digest, first_applied_at, last_applied_at) VALUES "
        "(1, 'sha256:a', 1, 1), (2, 'sha256:b', 2, 2), (3, 'sha256:c', 3, 3);"
        "INSERT INTO generation_texts VALUES (1, 'a'), (2, 'b'), (3, 'c');"
        "INSERT INTO cycles (started_at, finished_at, generation, failed) VALUES "
        "(1, 2, 1, 0), (2, 3, 2, 0), (3, 4, 2, 2), (4, 0, 3, 0);");
    EXPECT_EQ(raw.integer("PRAGMA auto_vacuum"), 0);
  }
  {
    auto store = Store::open(dir);
    const auto after = store.generations();
    ASSERT_EQ(after.size(), 3u);
    EXPECT_EQ(after[0].lastCycle, 1);
    EXPECT_TRUE(after[0].good());
    EXPECT_EQ(after[1].lastCycle, 3);  // its newest finished cycle, which failed
    EXPECT_EQ(after[1].lastFailed, 2);
    EXPECT_FALSE(after[1].good());
    EXPECT_EQ(after[2].lastCycle, 0);  // its one cycle never finished
    EXPECT_EQ(store.generationText(2), "b");
  }
  RawDb raw(db);
  EXPECT_EQ(raw.integer("PRAGMA user_version"), Store::kSchemaVersion);
  EXPECT_EQ(raw.integer("PRAGMA auto_vacuum"), 2);
  EXPECT_EQ(raw.text("PRAGMA integrity_check"), "ok");
}

TEST_F(RetentionTest, ANewStoreHasIncrementalVacuum) {
  { auto store = Store::open(dir); }
  EXPECT_EQ(RawDb(db).integer("PRAGMA auto_vacuum"), 2);
}

}  // namespace
}  // namespace mesh::state
