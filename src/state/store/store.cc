// The store itself: made by Store::open (store/open.cc), its transactions, and the
// statements kept for the hot paths. The tables' reads and writes are in the
// files beside this one, one file per group of tables.
#include "state/store.hh"

#include <memory>
#include <optional>
#include <string>

#include "state/store/impl.hh"

namespace mesh::state {

Stmt& Statements::lazy(std::optional<Stmt>& slot, const char* sql, const char* purpose) {
  if (!slot) slot.emplace(db_, sql, purpose);
  return *slot;
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

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

}  // namespace mesh::state
