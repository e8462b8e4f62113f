// The cycles and history tables: each cycle's row (begun, finished, its tally) and
// the bounded history of outcomes that were not `unchanged`.
#include <string>
#include <vector>

#include "state/cycle_error.hh"
#include "state/stop_note.hh"
#include "state/store.hh"
#include "state/store/impl.hh"

namespace mesh::state {

namespace {

constexpr const char* kCycleColumns =
    "cycle, started_at, finished_at, generation, created, updated, unchanged, removed, failed, ms, "
    "released, skipped";

Cycle readCycle(const Query& q) {
  Cycle c;
  c.cycle = q.integer(0);
  c.startedAt = q.integer(1);
  c.finishedAt = q.integer(2);
  c.generation = q.integer(3);
  c.tally.created = q.integer(4);
  c.tally.updated = q.integer(5);
  c.tally.unchanged = q.integer(6);
  c.tally.removed = q.integer(7);
  c.tally.failed = q.integer(8);
  c.ms = q.integer(9);
  c.tally.released = q.integer(10);
  c.tally.skipped = q.integer(11);
  return c;
}

}  // namespace

Stmt& Statements::addHistory() {
  return lazy(addHistory_,
              "INSERT INTO history (cycle, id, outcome, reason, want, wrote, at) "
              "VALUES (?, ?, ?, ?, ?, ?, ?)",
              "adding a history entry");
}

Stmt& Statements::trimHistory() {
  return lazy(trimHistory_, "DELETE FROM history WHERE cycle <= ?", "trimming old history");
}

int64_t Store::beginCycle(int64_t startedAt, int64_t generation, const std::string& node) {
  impl_->wrote(WriteKind::Bookkeeping);
  Stmt s(impl_->db,
         "INSERT INTO cycles (started_at, generation, node) VALUES (?, ?, ?) RETURNING cycle",
         "starting a cycle");
  auto q = s.start();
  q.bind(startedAt).bind(generation).bind(node);
  if (!q.next())
    throw Error("state store {}: starting a cycle returned no number", impl_->db.path());
  int64_t cycle = q.integer(0);
  q.run();  // step to the end so the insert completes (and autocommits) here
  return cycle;
}

void Store::finishCycle(const Cycle& c) {
  impl_->wrote(WriteKind::Bookkeeping);
  Stmt s(
      impl_->db,
      "UPDATE cycles SET finished_at = ?, generation = ?, created = ?, updated = ?, "
      "unchanged = ?, removed = ?, failed = ?, ms = ?, released = ?, skipped = ? WHERE cycle = ?",
      "finishing a cycle");
  s.start()
      .bind(c.finishedAt)
      .bind(c.generation)
      .bind(c.tally.created)
      .bind(c.tally.updated)
      .bind(c.tally.unchanged)
      .bind(c.tally.removed)
      .bind(c.tally.failed)
      .bind(c.ms)
      .bind(c.tally.released)
      .bind(c.tally.skipped)
      .bind(c.cycle)
      .run();
  if (sqlite3_changes(impl_->db.get()) == 0)
    throw Error("state store {}: cannot finish cycle {}: it was never begun", impl_->db.path(),
                c.cycle);
  // How its generation's newest finished cycle ended (Generation::good): kept in
  // the generation's row, which outlives the cycle's.
  if (c.finishedAt != 0 && c.generation != 0 && impl_->version >= 3) {
    Stmt g(impl_->db, "UPDATE generations SET last_cycle = ?, last_failed = ? WHERE generation = ?",
           "recording how a generation's cycle ended");
    g.start().bind(c.cycle).bind(c.tally.failed).bind(c.generation).run();
  }
  // The cycle's Kept writes (records, history, owed restarts) are durable once
  // it finishes: the WAL synced now if a write since the last sync asks for it.
  // A no-op cycle wrote none, and syncs nothing.
  if (impl_->unsyncedKept && !impl_->inTxn && !impl_->syncWal())
    throw SqliteError(SQLITE_IOERR, fmt::format("state store {}: syncing the cycle's writes failed",
                                                impl_->db.path()));
  clearCycleError(impl_->stateDir);  // a cycle ran: an earlier failure to start is over
  // A cycle finished: what an earlier one stopped on request left undone is done.
  if (c.finishedAt != 0) clearCycleStopped(impl_->stateDir);
}

void Store::addHistory(const HistoryEntry& h) {
  impl_->checkIntegrity();
  impl_->wrote(WriteKind::Kept);
  if (h.cycle != impl_->trimmedForCycle) {
    impl_->st->trimHistory().start().bind(h.cycle - kHistoryCycles).run();
    impl_->trimmedForCycle = h.cycle;
  }
  auto q = impl_->st->addHistory().start();
  q.bind(h.cycle).bind(h.id).bind(h.outcome).bind(h.reason).bind(h.want).bind(h.wrote);
  q.bind(h.at).run();
}

std::optional<Cycle> Store::lastCycle() {
  Stmt s(impl_->db,
         fmt::format("SELECT {} FROM cycles ORDER BY cycle DESC LIMIT 1", kCycleColumns).c_str(),
         "reading the last cycle");
  auto q = s.start();
  if (!q.next()) return std::nullopt;
  return readCycle(q);
}

std::optional<Cycle> Store::lastFinishedCycle() {
  Stmt s(impl_->db,
         fmt::format("SELECT {} FROM cycles WHERE finished_at != 0 ORDER BY cycle DESC LIMIT 1",
                     kCycleColumns)
             .c_str(),
         "reading the last finished cycle");
  auto q = s.start();
  if (!q.next()) return std::nullopt;
  return readCycle(q);
}

std::optional<std::string> Store::nodeName() {
  // A read-only open of a store made before cycles.node existed.
  if (impl_->db.queryInt("SELECT count(*) FROM pragma_table_info('cycles') WHERE name = 'node'",
                         "looking for cycles.node") == 0)
    return std::nullopt;
  Stmt s(impl_->db, "SELECT node FROM cycles WHERE node != '' ORDER BY cycle DESC LIMIT 1",
         "reading the node's name");
  auto q = s.start();
  if (!q.next()) return std::nullopt;
  return q.text(0);
}

std::vector<Cycle> Store::cycles(int64_t limit) {
  Stmt s(impl_->db,
         fmt::format("SELECT {} FROM cycles ORDER BY cycle DESC LIMIT ?", kCycleColumns).c_str(),
         "listing cycles");
  auto q = s.start();
  q.bind(limit > 0 ? limit : int64_t{-1});
  std::vector<Cycle> out;
  while (q.next()) out.push_back(readCycle(q));
  return out;
}

int64_t Store::cycleCount() {
  return impl_->db.queryInt("SELECT count(*) FROM cycles", "counting cycles");
}

std::vector<HistoryEntry> Store::history(const std::string& id, int64_t limit) {
  // Both orders are served by an index: (cycle) and (id, cycle) end in the rowid.
  const char* sql =
      id.empty() ? "SELECT cycle, id, outcome, reason, want, wrote, at FROM history "
                   "ORDER BY cycle DESC, rowid DESC LIMIT ?"
                 : "SELECT cycle, id, outcome, reason, want, wrote, at FROM history WHERE id = ? "
                   "ORDER BY cycle DESC, rowid DESC LIMIT ?";
  Stmt s(impl_->db, sql, "reading history");
  auto q = s.start();
  if (!id.empty()) q.bind(id);
  q.bind(limit > 0 ? limit : int64_t{-1});  // SQLite: a negative LIMIT means none
  std::vector<HistoryEntry> out;
  while (q.next())
    out.push_back(
        {q.integer(0), q.text(1), q.text(2), q.text(3), q.text(4), q.text(5), q.integer(6)});
  return out;
}

}  // namespace mesh::state
