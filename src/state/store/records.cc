// The records table: per resource, what mesh-host last wrote and how the last
// cycle ended for it. A cycle reads every row at once (loadRecordSet, into the
// compact set of state/records.hh); a write is Kept (store/impl.hh).
#include <string>
#include <unordered_map>

#include "state/records.hh"
#include "state/store.hh"
#include "state/store/impl.hh"

namespace mesh::state {

namespace {

constexpr const char* kRecordColumns =
    "id, module, kind, path, want, wrote, outcome, reason, detail, changed_at, changed_cycle, "
    "changes, observed";

Record readRecord(const Query& q) {
  Record r;
  r.id = q.text(0);
  r.module = q.text(1);
  r.kind = q.text(2);
  r.path = q.text(3);
  r.want = q.text(4);
  r.wrote = q.text(5);
  r.outcome = q.text(6);
  r.reason = q.text(7);
  r.detail = q.text(8);
  r.changedAt = q.integer(9);
  r.changedCycle = q.integer(10);
  r.changes = q.integer(11);
  r.observed = q.text(12);
  return r;
}

}  // namespace

Stmt& Statements::loadRecords() {
  static const std::string sql = fmt::format("SELECT {} FROM records", kRecordColumns);
  return lazy(loadRecords_, sql.c_str(), "loading resource records");
}

Stmt& Statements::countRecords() {
  return lazy(countRecords_, "SELECT count(*) FROM records", "counting resource records");
}

Stmt& Statements::record() {
  static const std::string sql = fmt::format("SELECT {} FROM records WHERE id = ?", kRecordColumns);
  return lazy(record_, sql.c_str(), "reading a resource record");
}

Stmt& Statements::putRecord() {
  return lazy(putRecord_,
              "INSERT INTO records (id, module, kind, path, want, wrote, outcome, reason, "
              "detail, changed_at, changed_cycle, changes, observed) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
              "ON CONFLICT (id) DO UPDATE SET module = excluded.module, "
              "kind = excluded.kind, path = excluded.path, want = excluded.want, "
              "wrote = excluded.wrote, outcome = excluded.outcome, "
              "reason = excluded.reason, detail = excluded.detail, "
              "changed_at = excluded.changed_at, changed_cycle = excluded.changed_cycle, "
              "changes = excluded.changes, observed = excluded.observed",
              "saving a resource record");
}

Stmt& Statements::deleteRecord() {
  return lazy(deleteRecord_, "DELETE FROM records WHERE id = ?", "deleting a resource record");
}

std::unordered_map<std::string, Record> Store::loadRecords() {
  // Every page of the records is read here, every cycle: a damaged one says so.
  return impl_->guard([&] {
    std::unordered_map<std::string, Record> out;
    // Sized up front: rehashing 10,000 nodes costs as much as reading them.
    if (auto c = impl_->st->countRecords().start(); c.next()) out.reserve(c.integer(0));
    auto q = impl_->st->loadRecords().start();
    while (q.next()) {
      Record r = readRecord(q);
      std::string id = r.id;
      out.emplace(std::move(id), std::move(r));
    }
    return out;
  });
}

Records Store::loadRecordSet(size_t expected) {
  // Every page of the records is read here, every cycle: a damaged one says so.
  return impl_->guard([&] {
    Records out;
    // Sized once from the caller's guess (a cycle's: its resources), not grown
    // by doubling, which holds two copies of the rows at once, and up to twice
    // the room they need. Counting the rows first would read every page twice.
    out.reserve(expected);
    auto q = impl_->st->loadRecords().start();
    while (q.next()) {
      RecordView v{q.textView(0), q.textView(1), q.textView(2), q.textView(3), q.textView(4),
                   q.textView(5), q.textView(6), q.textView(7), q.textView(8), q.textView(12),
                   q.integer(9),  q.integer(10), q.integer(11)};
      out.add(v);  // copied out of the row before the next step
    }
    out.sort();
    return out;
  });
}

std::optional<Record> Store::record(const std::string& id) {
  auto q = impl_->st->record().start();
  q.bind(id);
  if (!q.next()) return std::nullopt;
  return readRecord(q);
}

void Store::putRecord(const Record& r) {
  impl_->checkIntegrity();
  impl_->wrote(WriteKind::Kept);
  auto q = impl_->st->putRecord().start();
  q.bind(r.id).bind(r.module).bind(r.kind).bind(r.path).bind(r.want).bind(r.wrote);
  q.bind(r.outcome).bind(r.reason).bind(r.detail).bind(r.changedAt).bind(r.changedCycle);
  q.bind(r.changes).bind(r.observed).run();
}

void Store::deleteRecord(const std::string& id) {
  impl_->checkIntegrity();
  impl_->wrote(WriteKind::Kept);
  impl_->st->deleteRecord().start().bind(id).run();
}

}  // namespace mesh::state
