// A row of the records table (store/records.cc): what mesh-host last wrote for one
// resource and how the last cycle ended for it. The compact set a cycle holds is
// state/records.hh.
#pragma once

#include <cstdint>
#include <string>

namespace mesh::state {

struct Record {
  std::string id;  // "<module>.<name>"
  std::string module;
  std::string kind;     // "file", "directory", …
  std::string path;     // managed path on the node ("" for a process)
  std::string want;     // digest the declaration asked for, as "sha256:…"
  std::string wrote;    // digest the machine held after the last cycle ("" unknown)
  std::string outcome;  // last outcome: created/updated/unchanged/removed/failed
  std::string reason;
  std::string detail;
  int64_t changedAt = 0;     // unix ms of the last created/updated
  int64_t changedCycle = 0;  // cycle of the last created/updated
  int64_t changes = 0;       // how many times created/updated, ever
  std::string observed;      // kind-specific fast-path data (stat fingerprint, manifest)
  bool operator==(const Record&) const = default;
};

}  // namespace mesh::state
