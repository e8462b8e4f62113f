// The fleet_declaration table: fleet mode's pushed declaration last cycled with,
// kept so that a restarted agent converges to it without etcd.
#include <optional>
#include <string>

#include "state/store.hh"
#include "state/store/impl.hh"

namespace mesh::state {

void Store::putFleetDeclaration(const FleetDeclaration& f) {
  impl_->checkIntegrity();
  impl_->wrote(WriteKind::Kept);
  Stmt s(impl_->db,
         "INSERT INTO fleet_declaration (key, revision, envelope, received_at) VALUES (?, ?, ?, ?) "
         "ON CONFLICT (key) DO UPDATE SET revision = excluded.revision, "
         "envelope = excluded.envelope, received_at = excluded.received_at",
         "caching the pushed declaration");
  s.start().bind(f.key).bind(f.revision).bind(f.envelope).bind(f.receivedAt).run();
}

std::optional<Store::FleetDeclaration> Store::fleetDeclaration(const std::string& key) {
  // A read-only open of a store made before the table existed.
  if (impl_->db.queryInt(
          "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'fleet_declaration'",
          "looking for the fleet_declaration table") == 0)
    return std::nullopt;
  Stmt s(impl_->db,
         "SELECT key, revision, envelope, received_at FROM fleet_declaration WHERE key = ?",
         "reading the cached pushed declaration");
  auto q = s.start();
  q.bind(key);
  if (!q.next()) return std::nullopt;
  return FleetDeclaration{q.text(0), q.integer(1), q.text(2), q.integer(3)};
}

}  // namespace mesh::state
