// What the store makes durable, and when (docs/state-store.md, "WAL and
// durability"), played on the simulated disk of the fault simulation
// (tests/sim/disk.hh): a power cut loses every write since a file's last sync.
// What later cycles act on (records, owed restarts, history, a new generation)
// survives a power cut once the cycle that wrote it finished; what a no-op cycle
// writes (its own row, the generation's times) is never synced on its own.
#include <gtest/gtest.h>

#include <optional>

#include "disk.hh"
#include "state/store.hh"
#include "state_test.hh"

namespace mesh::state {
namespace {

class Durability : public testing::StateTest {
 protected:
  static void SetUpTestSuite() {
    static bool installed = false;
    if (!installed) sim::disk::install();
    installed = true;
  }
  void TearDown() override {
    sim::disk::forget(db);
    StateTest::TearDown();
  }

  static Record record(const std::string& id) {
    Record r;
    r.id = id;
    r.module = "m";
    r.kind = "file";
    r.path = "/srv/" + id;
    r.want = r.wrote = "sha256:" + std::string(64, 'a');
    r.outcome = "created";
    r.reason = "new";
    return r;
  }

  static Cycle finished(int64_t cycle, int64_t at, int64_t generation) {
    Cycle c;
    c.cycle = cycle;
    c.startedAt = at;
    c.finishedAt = at + 2;
    c.generation = generation;
    return c;
  }

  // One cycle that changes something, as apply/cycle/ writes it: a new
  // generation and the cycle's row, then the record, the restart it owes and
  // its history in one unsynced transaction, then the cycle's finish.
  static void changingCycle(Store& store, const std::string& id) {
    Store::Txn begin(store);
    const int64_t gen = store.recordGeneration("sha256:" + id, "text of " + id, 1000);
    const int64_t cycle = store.beginCycle(1000, gen);
    begin.commit();
    Store::Txn txn(store);
    store.putRecord(record(id));
    store.oweRestart({"m.svc", id, cycle, 1001, "", false});
    store.addHistory({cycle, id, "created", "new", "sha256:x", "sha256:x", 1001});
    txn.commit();
    store.finishCycle(finished(cycle, 1000, gen));
  }

  // A power cut now; the disk as it was synced, once every connection is gone.
  static void powerCut(std::optional<Store>& store) {
    auto images = sim::disk::osCrash();
    store.reset();
    sim::disk::restoreAfterOsCrash(images);
  }
};

TEST_F(Durability, WhatACycleChangedSurvivesAPowerCutOnceItFinished) {
  std::optional<Store> store = Store::open(dir);
  changingCycle(*store, "m.a");
  powerCut(store);  // the store still open: its close never happened

  auto after = Store::open(dir);
  after.checkIntegrity();
  ASSERT_TRUE(after.record("m.a")) << "the record of a finished cycle was lost";
  ASSERT_EQ(after.owedRestarts().size(), 1u);
  EXPECT_EQ(after.history("m.a", 0).size(), 1u);
  ASSERT_EQ(after.generations().size(), 1u);
  EXPECT_EQ(after.generationText(1), "text of m.a");
  EXPECT_EQ(after.lastFinishedCycle()->cycle, 1);
}

TEST_F(Durability, WhatWasWrittenOutsideACycleIsSyncedWhenTheStoreCloses) {
  std::optional<Store> store = Store::open(dir);
  store->putRecord(record("m.b"));
  store.reset();  // closed: the WAL synced
  store = Store::open(dir);
  powerCut(store);
  EXPECT_TRUE(Store::open(dir).record("m.b"));
}

// What a no-op cycle writes is never synced: a power cut may take back its
// row (the next cycle then sweeps as after a crash) and the generation's
// times, and nothing else. Before, closing the store checkpointed, so every
// no-op apply synced its WAL and the file, and the next one the new WAL.
TEST_F(Durability, ANoOpCycleSyncsNothingAndAPowerCutTakesBackOnlyItsOwnRows) {
  {
    auto store = Store::open(dir);
    changingCycle(store, "m.a");
  }
  std::optional<Store> store = Store::open(dir);
  {
    Store::Txn begin(*store);
    const int64_t gen = store->recordGeneration("sha256:m.a", "text of m.a", 5000);
    ASSERT_EQ(gen, 1);
    const int64_t cycle = store->beginCycle(5000, gen);
    begin.commit();
    store->finishCycle(finished(cycle, 5000, gen));
  }
  store.reset();  // a clean close, as the no-op apply ends
  store = Store::open(dir);
  powerCut(store);

  auto after = Store::open(dir);
  after.checkIntegrity();
  EXPECT_TRUE(after.record("m.a"));
  EXPECT_EQ(after.owedRestarts().size(), 1u);
  EXPECT_EQ(after.cycleCount(), 1) << "the no-op cycle's row was synced";
  EXPECT_EQ(after.generations().at(0).lastAppliedAt, 1000);
}

// A restart owed is synced at its commit (Sync::Full), before the change it owes.
TEST_F(Durability, AnIntentIsDurableAtItsCommit) {
  std::optional<Store> store = Store::open(dir);
  store->beginCycle(1000, 0);
  store->oweRestartsDurably({{"m.svc", "m.svc", 1, 1000, "sha256:next", false}});
  powerCut(store);
  auto owed = Store::open(dir).owedRestarts();
  ASSERT_EQ(owed.size(), 1u);
  EXPECT_EQ(owed[0].intent, "sha256:next");
}

// `apply` reads the compiled declaration from the main file alone (immutable
// mode): closing the store after writing it checkpoints it there.
TEST_F(Durability, TheCompiledDeclarationIsInTheMainFileOnceTheStoreCloses) {
  {
    auto store = Store::open(dir);
    changingCycle(store, "m.a");
    store.putCompiledDeclaration("sha256:key", "the form");
  }
  EXPECT_EQ(Store::peekCompiledDeclaration(dir, "sha256:key"), "the form");
}

}  // namespace
}  // namespace mesh::state
