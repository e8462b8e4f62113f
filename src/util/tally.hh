// How many resources a cycle (or a plan) left in each outcome: one type for the cycle
// report, the store's cycle row, the metrics and a node's fleet status, so that a new
// outcome is one field here rather than five counters copied field by field.
//
//   created, updated   the resource was written
//   unchanged          as declared: nothing touched
//   removed            no longer declared: what mesh-host wrote was deleted
//   released           no longer declared, left in place (mesh-host never wrote it, or
//                      another resource now manages its path): only the record went
//   skipped            not tried: a resource it requires failed; what was there stays
//   failed             tried and failed; what was there stays
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

namespace mesh {

struct Tally {
  int64_t created = 0, updated = 0, unchanged = 0, removed = 0, released = 0, skipped = 0,
          failed = 0;

  // The machine changed: something was written or deleted.
  bool anyChange() const { return created + updated + removed > 0; }
  // Something did not converge (a skipped resource always follows a failed one).
  bool anyFailed() const { return failed + skipped > 0; }

  // Every field with its outcome's name, in the order outputs list them.
  std::array<std::pair<std::string_view, int64_t>, 7> named() const {
    return {{{"created", created},
             {"updated", updated},
             {"unchanged", unchanged},
             {"removed", removed},
             {"released", released},
             {"skipped", skipped},
             {"failed", failed}}};
  }
  bool operator==(const Tally&) const = default;
};

}  // namespace mesh
