// The generations and generation_texts tables: every distinct declaration applied,
// its text (what a rollback applies again), when and from where, and its serial
// (the replay guard).
#include <climits>
#include <optional>
#include <string>
#include <vector>

#include "state/store.hh"
#include "state/store/impl.hh"

namespace mesh::state {

int64_t Store::recordGeneration(const std::string& digest, const std::string& text, int64_t now,
                                const std::string& source, const std::string& baseDir,
                                std::optional<int64_t> serial) {
  auto bindSerial = [&serial](Query& q) -> Query& {
    return serial ? q.bind(*serial) : q.bindNull();
  };
  // A text applied before (every no-op apply): its row is updated without the
  // text being bound, copied and built into a record again.
  Stmt known(impl_->db, "SELECT generation FROM generations WHERE digest = ?",
             "looking up a declaration generation");
  std::optional<int64_t> generation;
  if (auto q = known.start(); q.bind(digest).next()) generation = q.integer(0);
  if (generation) {
    impl_->wrote(WriteKind::Bookkeeping);  // when, and from where: what it did
    Stmt s(impl_->db,
           "UPDATE generations SET serial = ?1, last_applied_at = max(last_applied_at, ?2), "
           "source = iif(?3 = '', source, ?3), base_dir = iif(?3 = '', base_dir, ?4) "
           "WHERE generation = ?5",
           "recording a declaration generation");
    auto q = s.start();
    bindSerial(q).bind(now).bind(source).bind(baseDir).bind(*generation);
    q.run();
    return *generation;
  }
  impl_->wrote(WriteKind::Kept);  // the text a rollback applies again
  // The row and its text together, or neither.
  std::optional<Txn> txn;
  if (!impl_->inTxn) txn.emplace(*this);
  Stmt s(impl_->db,
         "INSERT INTO generations (digest, first_applied_at, last_applied_at, source, base_dir, "
         "serial) VALUES (?, ?, ?, ?, ?, ?) RETURNING generation",
         "recording a declaration generation");
  auto q = s.start();
  q.bind(digest).bind(now).bind(now).bind(source).bind(baseDir);
  bindSerial(q);
  if (!q.next())
    throw Error("state store {}: recording a generation returned no number", impl_->db.path());
  const int64_t added = q.integer(0);
  q.run();
  // Written once, never updated: the row above is, by every apply of this text.
  // Made with room for the text, which is then written into it a piece at a time
  // (Db::fillBlob): bound whole, the 18 MB text of 100,000 files was copied twice
  // more at the start of a first apply, its peak. So a text is kept as a BLOB
  // (a row written before, as TEXT), read back the same either way.
  constexpr const char* kSaving = "recording a declaration generation's text";
  if (text.size() > INT_MAX) impl_->db.fail(SQLITE_TOOBIG, kSaving);
  Stmt t(impl_->db, "INSERT INTO generation_texts (generation, text) VALUES (?, zeroblob(?))",
         kSaving);
  t.start().bind(added).bind(static_cast<int64_t>(text.size())).run();
  impl_->db.fillBlob("generation_texts", "text", added, text.size(), writerOf(text), kSaving);
  if (txn) txn->commit();
  return added;
}

std::optional<Store::AppliedSerial> Store::highestSerial() {
  // A read-only open of a store made before generations.serial existed.
  if (impl_->db.queryInt(
          "SELECT count(*) FROM pragma_table_info('generations') WHERE name = 'serial'",
          "looking for generations.serial") == 0)
    return std::nullopt;
  Stmt s(impl_->db,
         "SELECT serial, generation, last_applied_at FROM generations WHERE serial IS NOT NULL "
         "ORDER BY serial DESC, last_applied_at DESC LIMIT 1",
         "reading the highest serial applied");
  auto q = s.start();
  if (!q.next()) return std::nullopt;
  return AppliedSerial{q.integer(0), q.integer(1), q.integer(2)};
}

std::vector<Generation> Store::generations() {
  // Version 3 keeps how each generation's newest finished cycle ended in its row
  // (finishCycle writes it: cycles are trimmed). Before, one pass over cycles.
  Stmt s(impl_->db,
         impl_->version >= 3
             ? "SELECT generation, digest, first_applied_at, last_applied_at, source, base_dir, "
               "last_cycle, last_failed FROM generations ORDER BY generation"
             : "WITH last AS (SELECT generation, max(cycle) AS cycle FROM cycles "
               "WHERE finished_at != 0 GROUP BY generation) "
               "SELECT g.generation, g.digest, g.first_applied_at, g.last_applied_at, g.source, "
               "g.base_dir, coalesce(c.cycle, 0), coalesce(c.failed, 0) FROM generations g "
               "LEFT JOIN last l ON l.generation = g.generation "
               "LEFT JOIN cycles c ON c.cycle = l.cycle ORDER BY g.generation",
         "listing generations");
  std::vector<Generation> out;
  auto q = s.start();
  while (q.next())
    out.push_back({q.integer(0), q.text(1), q.integer(2), q.integer(3), q.text(4), q.text(5),
                   q.integer(6), q.integer(7)});
  return out;
}

std::optional<GenerationDeclaration> Store::generationDeclaration(int64_t generation) {
  Stmt s(impl_->db,
         impl_->textsApart
             ? "SELECT t.text, g.source, g.base_dir FROM generations g JOIN generation_texts t "
               "USING (generation) WHERE g.generation = ?"
             : "SELECT text, source, base_dir FROM generations WHERE generation = ?",
         "reading a declaration generation");
  auto q = s.start();
  q.bind(generation);
  if (!q.next()) return std::nullopt;
  return GenerationDeclaration{q.text(0), q.text(1), q.text(2)};
}

bool Store::knowsGeneration(const std::string& digest) {
  Stmt s(impl_->db, "SELECT 1 FROM generations WHERE digest = ?",
         "looking up a declaration generation");
  auto q = s.start();
  return q.bind(digest).next();
}

std::optional<std::string> Store::generationText(int64_t generation) {
  Stmt s(impl_->db,
         impl_->textsApart ? "SELECT text FROM generation_texts WHERE generation = ?"
                           : "SELECT text FROM generations WHERE generation = ?",
         "reading a declaration generation");
  auto q = s.start();
  q.bind(generation);
  if (!q.next()) return std::nullopt;
  return q.text(0);
}

}  // namespace mesh::state
