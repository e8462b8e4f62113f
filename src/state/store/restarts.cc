// The owed_restarts and process_causes tables: what processes are owed (a restart
// or a reload, confirmed or an intent) and what each restarts or reloads on, as the
// newest cycle declared it.
#include <algorithm>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "state/store.hh"
#include "state/store/impl.hh"

namespace mesh::state {

void Store::oweRestart(const OwedRestart& o) {
  impl_->checkIntegrity();
  impl_->wrote(WriteKind::Kept);
  Stmt s(impl_->db,
         "INSERT INTO owed_restarts (process, cause, cycle, at, intent, kind) "
         "VALUES (?, ?, ?, ?, ?, ?) "
         "ON CONFLICT (process, cause) DO UPDATE SET cycle = excluded.cycle, at = excluded.at, "
         "intent = excluded.intent, kind = CASE WHEN owed_restarts.kind = 'restart' AND "
         "owed_restarts.intent = '' THEN 'restart' ELSE excluded.kind END "
         "WHERE excluded.intent = '' OR owed_restarts.intent != ''",
         "recording an owed restart");
  auto q = s.start();
  q.bind(o.process).bind(o.cause).bind(o.cycle).bind(o.at).bind(o.intent);
  q.bind(o.reload ? "reload" : "restart").run();
}

void Store::oweRestartsDurably(const std::vector<OwedRestart>& intents) {
  if (intents.empty()) return;
  impl_->checkIntegrity();
  Txn txn(*this, Txn::Sync::Full);
  for (const auto& o : intents) oweRestart(o);
  txn.commit();
}

void Store::cancelOwedRestart(const std::string& process, const std::string& cause) {
  impl_->checkIntegrity();
  impl_->wrote(WriteKind::Kept);
  Stmt s(impl_->db, "DELETE FROM owed_restarts WHERE process = ? AND cause = ? AND intent != ''",
         "cancelling an owed restart");
  s.start().bind(process).bind(cause).run();
}

void Store::settleOwedRestart(const std::string& process, const std::string& cause, int64_t at) {
  impl_->checkIntegrity();
  impl_->wrote(WriteKind::Kept);
  Stmt s(impl_->db, "DELETE FROM owed_restarts WHERE process = ? AND cause = ? AND at <= ?",
         "settling a paid restart");
  s.start().bind(process).bind(cause).bind(at).run();
}

std::vector<OwedRestart> Store::owedRestarts() {
  Stmt s(
      impl_->db,
      "SELECT process, cause, cycle, at, intent, kind FROM owed_restarts ORDER BY process, cause",
      "reading owed restarts");
  std::vector<OwedRestart> out;
  auto q = s.start();
  while (q.next())
    out.push_back(
        {q.text(0), q.text(1), q.integer(2), q.integer(3), q.text(4), q.text(5) == "reload"});
  return out;
}

void Store::clearOwedRestarts(const std::string& process, std::optional<int64_t> beforeCycle) {
  impl_->checkIntegrity();
  impl_->wrote(WriteKind::Kept);
  Stmt s(impl_->db, "DELETE FROM owed_restarts WHERE process = ? AND cycle < ?",
         "clearing owed restarts");
  s.start().bind(process).bind(beforeCycle.value_or(std::numeric_limits<int64_t>::max())).run();
}

void Store::clearOwedReloads(const std::string& process) {
  impl_->checkIntegrity();
  impl_->wrote(WriteKind::Kept);
  Stmt s(impl_->db, "DELETE FROM owed_restarts WHERE process = ? AND kind = 'reload'",
         "clearing owed reloads");
  s.start().bind(process).run();
}

std::vector<ProcessCause> Store::processCauses() {
  // A read-only open of a store made before the table existed.
  if (impl_->db.queryInt(
          "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'process_causes'",
          "looking for the process_causes table") == 0)
    return {};
  Stmt s(impl_->db, "SELECT process, cause, kind FROM process_causes ORDER BY process, cause",
         "reading what processes restart on");
  std::vector<ProcessCause> out;
  auto q = s.start();
  while (q.next()) out.push_back({q.text(0), q.text(1), q.text(2) == "reload"});
  return out;
}

void Store::setProcessCauses(const std::vector<ProcessCause>& causes) {
  auto now = processCauses();
  std::sort(now.begin(), now.end(), [](const auto& a, const auto& b) {
    return std::tie(a.process, a.cause) < std::tie(b.process, b.cause);
  });
  auto want = causes;
  std::sort(want.begin(), want.end(), [](const auto& a, const auto& b) {
    return std::tie(a.process, a.cause) < std::tie(b.process, b.cause);
  });
  if (now == want) return;
  impl_->checkIntegrity();
  impl_->wrote(WriteKind::Kept);
  std::optional<Txn> own;
  if (!impl_->inTxn) own.emplace(*this);
  impl_->db.exec("DELETE FROM process_causes", "replacing what processes restart on");
  Stmt s(impl_->db, "INSERT OR REPLACE INTO process_causes (process, cause, kind) VALUES (?, ?, ?)",
         "recording what processes restart on");
  for (const auto& c : want)
    s.start().bind(c.process).bind(c.cause).bind(c.reload ? "reload" : "restart").run();
  if (own) own->commit();
}

}  // namespace mesh::state
