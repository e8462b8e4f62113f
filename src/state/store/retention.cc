// Trimming the store to its bounds (store/retention.hh): old cycle rows and their
// history, and old generations with their texts — never what something still
// needs. Called by every applying cycle once its row is finished, under the state
// lock the cycle holds; each call deletes at most Retention::batch rows of each
// table and reads only the oldest rows (a bounded walk from the old end of each
// primary key, never a scan of the whole table), then gives free pages back to
// the file system when too many have piled up (auto_vacuum = INCREMENTAL).
//
// Never trimmed, whatever the bounds say:
//  - the newest generation (numbers are SQLite rowids: the newest kept means a
//    number is never handed out twice) and the generations of the newest cycle
//    and of the newest finished cycle (what `status`, the agent and the fleet's
//    applied digest name);
//  - the newest good generation before the current one (what `rollback` without a
//    number applies);
//  - the generation of the highest serial applied (the replay guard, and the
//    digest fleet mode says it applied);
//  - the cycles an owed restart names, and their generations;
//  - generations the caller pins (Store::trim's `pinned`).
// Records, owed restarts, process causes and kept originals are not trimmed at
// all: the bounds are on the past, never on what a later cycle acts on.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "state/lock.hh"
#include "state/store.hh"
#include "state/store/impl.hh"
#include "util/error.hh"
#include "util/faults.hh"

namespace mesh::state {

namespace {

constexpr int64_t kDayMs = int64_t{86400} * 1000;

// The number `rank` places from the newest (1: the newest) in `table`'s integer
// primary key `column`; nullopt when there are fewer rows. Walks `rank` rows of
// the key's b-tree from its end.
std::optional<int64_t> nthNewest(Db& db, const char* table, const char* column, int64_t rank) {
  if (rank < 1) return std::nullopt;
  Stmt s(
      db,
      fmt::format("SELECT {0} FROM {1} ORDER BY {0} DESC LIMIT 1 OFFSET ?", column, table).c_str(),
      "finding the trim's bound");
  auto q = s.start();
  q.bind(rank - 1);
  if (!q.next()) return std::nullopt;
  return q.integer(0);
}

void deleteWhere(Db& db, const char* sql, int64_t value, const char* purpose) {
  Stmt s(db, sql, purpose);
  s.start().bind(value).run();
}

}  // namespace

std::string Retention::generationsText() const {
  return fmt::format("the last {} generations, and those applied within {} days", keepGenerations,
                     keepDays);
}

std::string Retention::cyclesText() const {
  return fmt::format("the last {} cycles, and those within {} days", keepCycles, keepDays);
}

void Retention::validate() const {
  auto atLeast = [](int64_t v, int64_t min, const char* option) {
    if (v < min) throw InputError("{} must be at least {} (got {})", option, min, v);
  };
  atLeast(keepGenerations, 1, "--keep-generations");
  atLeast(keepCycles, 1, "--keep-cycles");
  atLeast(keepDays, 1, "--keep-days");
  atLeast(batch, 1, "the trim's batch");
}

std::set<int64_t> Store::generationsInUse() {
  auto& db = impl_->db;
  std::set<int64_t> in;
  if (auto g = nthNewest(db, "generations", "generation", 1)) in.insert(*g);
  std::optional<int64_t> current;
  if (auto c = lastCycle(); c && c->generation != 0) in.insert(*(current = c->generation));
  if (auto c = lastFinishedCycle(); c && c->generation != 0) in.insert(c->generation);
  if (current && impl_->version >= 3) {
    Stmt s(db,
           "SELECT generation FROM generations WHERE generation < ? AND last_cycle != 0 AND "
           "last_failed = 0 ORDER BY generation DESC LIMIT 1",
           "finding the last good generation");
    auto q = s.start();
    q.bind(*current);
    if (q.next()) in.insert(q.integer(0));
  }
  if (auto h = highestSerial()) in.insert(h->generation);
  Stmt owed(db,
            "SELECT DISTINCT c.generation FROM owed_restarts o JOIN cycles c ON c.cycle = o.cycle",
            "finding the generations owed restarts name");
  for (auto q = owed.start(); q.next();) in.insert(q.integer(0));
  in.erase(0);
  return in;
}

TrimReport Store::trim(const Retention& r, int64_t now, const std::set<int64_t>& pinned) {
  if (!impl_->writable)
    throw Error("state store {}: opened read-only, cannot trim", impl_->db.path());
  if (impl_->version < 3) return {};  // a read-write open migrated it: never here
  // Only under the state lock, which no one but the state directory's owner can
  // take (state/lock.hh): a shared lock we can get means nobody holds it.
  if (StateLock::tryAcquire(impl_->stateDir, StateLock::Kind::Shared))
    throw Error("state store {}: trimming needs the state lock held (by a cycle, or gc)",
                impl_->db.path());
  auto& db = impl_->db;
  TrimReport out;
  const int64_t ageCut = now - r.keepDays * kDayMs;
  {
    Txn txn(*this);
    impl_->wrote(WriteKind::Bookkeeping);  // undone by a power cut, redone by the next trim

    // Cycles, oldest first: those beyond the count, or old and not among the
    // newest minCycles; never one an owed restart names.
    std::set<int64_t> owedCycles;
    {
      Stmt s(db, "SELECT DISTINCT cycle FROM owed_restarts",
             "finding the cycles owed restarts name");
      for (auto q = s.start(); q.next();) owedCycles.insert(q.integer(0));
    }
    if (const auto last = nthNewest(db, "cycles", "cycle", 1)) {
      const int64_t countCut = *last - r.keepCycles;  // cycle <= countCut: beyond the count
      const int64_t minCut = *last - r.minCycles;     // cycle <= minCut: may go by age
      Stmt s(db, "SELECT cycle, started_at FROM cycles WHERE cycle <= ? ORDER BY cycle LIMIT ?",
             "reading the oldest cycles");
      auto q = s.start();
      q.bind(std::max(countCut, minCut)).bind(r.batch + static_cast<int64_t>(owedCycles.size()));
      std::vector<int64_t> gone;
      while (q.next() && static_cast<int64_t>(gone.size()) < r.batch) {
        const int64_t cycle = q.integer(0);
        if (owedCycles.count(cycle)) continue;
        const bool beyondCount = cycle <= countCut;
        const bool tooOld = cycle <= minCut && q.integer(1) < ageCut;
        if (!beyondCount && !tooOld) break;  // newer ones are kept too
        gone.push_back(cycle);
      }
      out.more = static_cast<int64_t>(gone.size()) == r.batch;
      for (int64_t cycle : gone)
        deleteWhere(db, "DELETE FROM cycles WHERE cycle = ?", cycle, "trimming a cycle");
      out.cycles = static_cast<int64_t>(gone.size());
      if (!gone.empty()) {
        deleteWhere(db, "DELETE FROM history WHERE cycle <= ?", gone.back(),
                    "trimming the history of trimmed cycles");
        out.history = sqlite3_changes(db.get());
      }
    }

    // Generations, oldest first: beyond the count, or last applied before the
    // age bound and not among the newest minGenerations; never one in use.
    std::set<int64_t> keep = generationsInUse();
    keep.insert(pinned.begin(), pinned.end());
    const auto countFrom = nthNewest(db, "generations", "generation", r.keepGenerations);
    const auto ageFrom = nthNewest(db, "generations", "generation", r.minGenerations);
    if (countFrom || ageFrom) {
      Stmt s(db,
             "SELECT generation, last_applied_at FROM generations WHERE generation < ? ORDER BY "
             "generation LIMIT ?",
             "reading the oldest generations");
      auto q = s.start();
      // Only below the keepGenerations-th newest (count) or the minGenerations-th
      // newest (age) may a generation go. A generation applied again lately
      // (rollback) is skipped, not a reason to stop: the walk is bounded anyway.
      q.bind(std::max(countFrom.value_or(0), ageFrom.value_or(0)));
      q.bind(2 * r.batch + static_cast<int64_t>(keep.size()));
      std::vector<int64_t> gone;
      while (q.next() && static_cast<int64_t>(gone.size()) < r.batch) {
        const int64_t g = q.integer(0);
        if (keep.count(g)) continue;
        const bool beyondCount = countFrom && g < *countFrom;
        const bool tooOld = ageFrom && g < *ageFrom && q.integer(1) < ageCut;
        if (beyondCount || tooOld) gone.push_back(g);
      }
      out.more = out.more || static_cast<int64_t>(gone.size()) == r.batch;
      for (int64_t g : gone) {
        deleteWhere(db, "DELETE FROM generation_texts WHERE generation = ?", g,
                    "trimming a generation's text");
        deleteWhere(db, "DELETE FROM generations WHERE generation = ?", g, "trimming a generation");
      }
      out.generations = static_cast<int64_t>(gone.size());
    }

    if (out.cycles + out.generations > 0) {
      // What `generations`, `rollback` and `history` say was trimmed, and by
      // which bounds (another agent's options may differ from a reader's).
      Stmt s(db,
             "INSERT OR REPLACE INTO retention (id, keep_generations, keep_cycles, keep_days, "
             "min_generations, min_cycles, trimmed_at) VALUES (1, ?, ?, ?, ?, ?, ?)",
             "recording the store's bounds");
      s.start()
          .bind(r.keepGenerations)
          .bind(r.keepCycles)
          .bind(r.keepDays)
          .bind(r.minGenerations)
          .bind(r.minCycles)
          .bind(now)
          .run();
    }
    crashPoint(crash::kMidTrim);
    txn.commit();
  }
  out.pagesFreed = impl_->giveBackFreePages();
  return out;
}

int64_t Store::Impl::giveBackFreePages() {
  // Free pages are reused by later writes; only when they pile up beyond an
  // eighth of the file are some given back, a bounded number per call, so that
  // a store that shrank stops growing and one that trimmed a lot shrinks.
  if (db.queryInt("PRAGMA auto_vacuum", "reading the vacuum mode") != 2) return 0;
  const int64_t pages = db.queryInt("PRAGMA page_count", "counting pages");
  const int64_t free = db.queryInt("PRAGMA freelist_count", "counting free pages");
  if (free <= std::max<int64_t>(64, pages / 8)) return 0;
  const int64_t give = std::min<int64_t>(free - pages / 16, 2048);
  wrote(WriteKind::Bookkeeping);
  db.exec(fmt::format("PRAGMA incremental_vacuum({})", give).c_str(), "giving free pages back");
  return pages - db.queryInt("PRAGMA page_count", "counting pages");
}

std::optional<Retention> Store::lastRetention() {
  if (impl_->version < 3) return std::nullopt;
  Stmt s(impl_->db,
         "SELECT keep_generations, keep_cycles, keep_days, min_generations, min_cycles FROM "
         "retention WHERE id = 1",
         "reading the store's bounds");
  auto q = s.start();
  if (!q.next()) return std::nullopt;
  Retention r;
  r.keepGenerations = q.integer(0);
  r.keepCycles = q.integer(1);
  r.keepDays = q.integer(2);
  r.minGenerations = q.integer(3);
  r.minCycles = q.integer(4);
  return r;
}

bool Store::generationTrimmed(int64_t generation) {
  if (generation < 1) return false;
  const auto newest = nthNewest(impl_->db, "generations", "generation", 1);
  if (!newest || generation > *newest) return false;
  Stmt s(impl_->db, "SELECT 1 FROM generations WHERE generation = ?", "looking up a generation");
  auto q = s.start();
  return !q.bind(generation).next();
}

std::optional<int64_t> Store::oldestCycle() {
  const int64_t oldest =
      impl_->db.queryInt("SELECT coalesce(min(cycle), 0) FROM cycles", "reading the oldest cycle");
  if (oldest == 0) return std::nullopt;
  return oldest;
}

}  // namespace mesh::state
