// Records, transactions and crash behaviour.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "state/records.hh"
#include "state/store.hh"
#include "state_test.hh"
#include "util/error.hh"

namespace mesh::state {
namespace {

using RecordsTest = testing::StateTest;

Record sample(const std::string& id) {
  return Record{.id = id,
                .module = "node-tools",
                .kind = "file",
                .path = "/etc/node-tools/" + id,
                .want = "sha256:" + std::string(64, 'a'),
                .wrote = "sha256:" + std::string(64, 'b'),
                .outcome = "updated",
                .reason = "drift",
                .detail = "mode 0644 -> 0600, with 'quotes' and \"double\" and ünïcode",
                .changedAt = 1'700'000'000'123,
                .changedCycle = 42,
                .changes = 7,
                .observed = "dev=1 ino=2\nsecond line"};
}

// Runs body in a child that exits without any cleanup, as a crash would, and
// returns its exit status.
template <typename F>
int inCrashingChild(F&& body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    try {
      body();
    } catch (...) {
      ::_exit(99);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(RecordsTest, RoundTripKeepsEveryField) {
  auto store = Store::open(dir);
  Record r = sample("config");
  r.observed = std::string("binary\0data", 11);
  store.putRecord(r);

  EXPECT_EQ(store.record("config"), r);
  auto all = store.loadRecords();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all.at("config"), r);
  EXPECT_FALSE(store.record("missing"));
}

TEST_F(RecordsTest, PutReplacesAndDeleteRemoves) {
  auto store = Store::open(dir);
  store.putRecord(sample("a"));
  store.putRecord(sample("b"));

  Record changed = sample("a");
  changed.outcome = "unchanged";
  changed.reason = "";
  changed.changes = 8;
  changed.path = "";
  store.putRecord(changed);
  EXPECT_EQ(store.record("a"), changed);
  EXPECT_EQ(store.loadRecords().size(), 2u);

  store.deleteRecord("a");
  store.deleteRecord("never-there");  // not an error
  auto all = store.loadRecords();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(all.count("b"));
}

TEST_F(RecordsTest, TxnWithoutCommitLeavesNothing) {
  auto store = Store::open(dir);
  store.putRecord(sample("kept"));
  {
    Store::Txn txn(store);
    store.putRecord(sample("lost"));
    store.deleteRecord("kept");
    EXPECT_TRUE(store.record("lost")) << "a transaction sees its own writes";
  }
  EXPECT_FALSE(store.record("lost"));
  EXPECT_TRUE(store.record("kept"));
}

TEST_F(RecordsTest, TxnCommitPersistsAcrossReopen) {
  {
    auto store = Store::open(dir);
    Store::Txn txn(store);
    store.putRecord(sample("a"));
    store.putRecord(sample("b"));
    txn.commit();
  }
  auto store = Store::open(dir);
  EXPECT_EQ(store.loadRecords().size(), 2u);
}

TEST_F(RecordsTest, TxnAfterRollbackStartsCleanly) {
  auto store = Store::open(dir);
  { Store::Txn txn(store); }
  Store::Txn txn(store);
  store.putRecord(sample("a"));
  txn.commit();
  EXPECT_TRUE(store.record("a"));
}

TEST_F(RecordsTest, NestedTxnIsRefused) {
  auto store = Store::open(dir);
  Store::Txn outer(store);
  EXPECT_THROW(Store::Txn inner(store), Error);
}

TEST_F(RecordsTest, CrashInsideTxnLeavesNothingAndCommittedWritesSurvive) {
  ASSERT_EQ(inCrashingChild([&] {
              auto store = Store::open(dir);
              store.putRecord(sample("autocommitted"));
              Store::Txn committed(store);
              store.putRecord(sample("committed"));
              committed.commit();
              Store::Txn pending(store);
              store.putRecord(sample("uncommitted"));
              ::_exit(0);  // die mid-transaction: no rollback, no close, no checkpoint
            }),
            0);
  auto store = Store::open(dir);
  EXPECT_TRUE(store.record("autocommitted"));
  EXPECT_TRUE(store.record("committed"));
  EXPECT_FALSE(store.record("uncommitted"));
  // And the store is writable again: the dead writer's lock went with it.
  store.putRecord(sample("after"));
  EXPECT_TRUE(store.record("after"));
}

TEST_F(RecordsTest, LoadsTenThousandRecordsQuickly) {
  auto store = Store::open(dir);
  {
    Store::Txn txn(store);
    for (int i = 0; i < 10'000; ++i) store.putRecord(sample("r" + std::to_string(i)));
    txn.commit();
  }
  store.loadRecords();  // warm the page cache, as a running agent would have it
  auto start = std::chrono::steady_clock::now();
  auto all = store.loadRecords();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  start)
                .count();
  EXPECT_EQ(all.size(), 10'000u);
  EXPECT_EQ(all.at("r9999"), sample("r9999"));
  // A few ms is typical; the bound is loose so that a loaded CI machine passes,
  // but still catches a query per record.
  EXPECT_LT(ms, 250) << "loadRecords took " << ms << " ms";
  RecordProperty("load_ms", static_cast<int>(ms));
}

// The compact set a cycle holds (Store::loadRecordSet) says, for every record,
// exactly what loadRecords says: every field, found by id whatever the order the
// rows were written in, across the set's blocks (one record larger than a block).
TEST_F(RecordsTest, CompactSetHoldsWhatLoadRecordsHolds) {
  auto store = Store::open(dir);
  {
    Store::Txn txn(store);
    for (int i = 3000; i-- > 0;) {  // rows in descending id order: the set sorts them
      Record r = sample("r" + std::to_string(i));
      if (i == 1234) r.observed = std::string(600 * 1024, 'x');  // past a block
      if (i == 7) r.observed = std::string("binary\0data", 11);
      if (i == 8) r.reason = r.detail = r.path = "";
      if (i % 3 == 0) r.wrote = r.want;  // held once in the set
      if (i == 9) r.want = r.wrote = "";
      if (i == 10) r.want = "";  // only what it wrote
      store.putRecord(r);
    }
    txn.commit();
  }
  const auto all = store.loadRecords();
  // However many records the caller expects: none said, fewer, as many, more.
  for (size_t expected : {0, 10, 3000, 5000}) {
    auto set = store.loadRecordSet(expected);
    ASSERT_EQ(set.size(), all.size()) << expected;
    ASSERT_EQ(set.slots(), all.size()) << expected;
    for (const auto& [id, rec] : all) {
      auto i = set.find(id);
      ASSERT_TRUE(i) << id;
      EXPECT_EQ(set[*i].id, id);
      EXPECT_EQ(set[*i].record(), rec) << id;
      Record reused = sample("something else entirely, longer than the small-string buffer");
      set[*i].copyTo(reused);
      EXPECT_EQ(reused, rec) << id;
    }
  }
  auto set = store.loadRecordSet(all.size());
  EXPECT_FALSE(set.find("r3000"));
  EXPECT_FALSE(set.find("r"));
  EXPECT_FALSE(set.find(""));

  auto i = set.find("r42");
  ASSERT_TRUE(i);
  set.erase(*i);
  set.erase(*i);  // once only
  EXPECT_FALSE(set.find("r42"));
  EXPECT_TRUE(set.erased(*i));
  EXPECT_EQ(set.size(), all.size() - 1);
  EXPECT_EQ(set.slots(), all.size());
}

// find() tries the record after the last one found first (a cycle asks in
// declaration order): whatever the order of the questions, it answers as a
// search would, erased records included; kind(i) is the view's kind.
TEST_F(RecordsTest, CompactSetFindsInAnyOrderAndNamesKinds) {
  auto store = Store::open(dir);
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i) {
    Record r = sample("m.r" + std::to_string(i));
    r.kind = i % 2 ? "process" : "file";
    store.putRecord(r);
    ids.push_back(r.id);
  }
  auto set = store.loadRecordSet(ids.size());
  auto expectFound = [&](const std::string& id) {
    auto i = set.find(id);
    ASSERT_TRUE(i) << id;
    EXPECT_EQ(set[*i].id, id);
    EXPECT_EQ(set.kind(*i), set[*i].kind);
  };
  for (const auto& id : ids) expectFound(id);  // in order: each the one after
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) expectFound(*it);
  expectFound("m.r3");
  expectFound("m.r3");  // the same again
  expectFound("m.r9");
  EXPECT_FALSE(set.find("m.r99"));  // past the last
  expectFound("m.r0");
  EXPECT_FALSE(set.find("m.r00"));  // between the one after and the rest
  const auto five = set.find("m.r5");
  ASSERT_TRUE(five);
  set.erase(*five);
  expectFound("m.r4");
  EXPECT_FALSE(set.find("m.r5"));  // the one after, erased
  expectFound("m.r6");
  EXPECT_EQ(set.kind(*set.find("m.r7")), "process");
  EXPECT_EQ(set.kind(*set.find("m.r8")), "file");
}

// A large observed text (a tree's record) is held once: lent to the record in hand,
// moved not copied, its view empty meanwhile, and the same text when given back.
TEST_F(RecordsTest, CompactSetLendsALargeObservedTextInsteadOfCopyingIt) {
  auto store = Store::open(dir);
  const std::string tree(200 * 1024, 't');
  {
    Record big = sample("m.tree");
    big.observed = tree;
    store.putRecord(big);
    store.putRecord(sample("m.small"));
  }
  auto set = store.loadRecordSet();
  const auto at = set.find("m.tree");
  const auto small = set.find("m.small");
  ASSERT_TRUE(at && small);
  std::string hand;
  EXPECT_FALSE(set.lendObserved(*small, hand));  // a small text is copied instead
  const char* held = set[*at].observed.data();
  ASSERT_TRUE(set.lendObserved(*at, hand));
  EXPECT_EQ(hand, tree);
  EXPECT_EQ(hand.data(), held);  // the very bytes: moved, not copied
  EXPECT_TRUE(set[*at].observed.empty());
  EXPECT_EQ(set[*at].path, sample("m.tree").path);  // the other fields stay
  std::string other;
  EXPECT_THROW(set.lendObserved(*at, other), Error);  // one loan at a time

  set.giveBack(hand);
  EXPECT_TRUE(hand.empty());
  EXPECT_EQ(set[*at].observed, tree);
  EXPECT_EQ(set[*at].record().observed, tree);
  set.giveBack(hand);  // nothing lent: nothing happens
  EXPECT_EQ(set[*at].observed, tree);
}

TEST_F(RecordsTest, CompactSetOfAnEmptyStoreIsEmpty) {
  auto store = Store::open(dir);
  auto set = store.loadRecordSet();
  EXPECT_EQ(set.size(), 0u);
  EXPECT_FALSE(set.find("m.a"));
}

}  // namespace
}  // namespace mesh::state
