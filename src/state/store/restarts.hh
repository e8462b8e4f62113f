// Rows of the owed restarts and process causes tables (store/restarts.cc).
#pragma once

#include <cstdint>
#include <string>

namespace mesh::state {

struct OwedRestart {
  std::string process;
  std::string cause;
  int64_t cycle = 0;
  int64_t at = 0;  // unix ms
  // Empty: the change that owes it is recorded (confirmed). Otherwise an intent:
  // the digest the cause was about to hold when the row was written, before the
  // change was made; the next cycle pays it only if the cause holds it by then.
  std::string intent;
  // A reload (the cause is in the process's reload-on), not a restart. A restart
  // pays it too; a reload never pays a restart.
  bool reload = false;
};

// A resource a process restarts (or reloads) on, as the newest cycle declared it:
// what lets a later cycle that removes the resource, once the process no longer
// lists it, restart the process that read it (docs/kinds.md).
struct ProcessCause {
  std::string process;  // the process resource's id
  std::string cause;    // an id in its restart-on (or reload-on)
  bool reload = false;  // in reload-on
  bool operator==(const ProcessCause&) const = default;
};

}  // namespace mesh::state
