// Rows of the generations table (store/generations.cc): every distinct declaration
// applied, and what it takes to apply one again.
#pragma once

#include <cstdint>
#include <string>

namespace mesh::state {

struct Generation {
  int64_t generation = 0;
  std::string digest;  // of the declaration text
  int64_t firstAppliedAt = 0;
  int64_t lastAppliedAt = 0;
  std::string source;   // the declaration's file, as given when last applied
  std::string baseDir;  // what a relative credential `from` was resolved against
  // How the newest finished cycle that applied it ended: lastCycle 0 when none
  // finished (every one was cut short), else its number and failed resources.
  int64_t lastCycle = 0;
  int64_t lastFailed = 0;
  // Good: its newest finished cycle converged every resource. A failed (or
  // never finished) generation is marked by `generations`, skipped by a
  // `rollback` without a number, and not counted by `gc --keep`.
  bool good() const { return lastCycle != 0 && lastFailed == 0; }
};

// What it takes to apply a generation again.
struct GenerationDeclaration {
  std::string text;
  std::string source;
  std::string baseDir;
};

}  // namespace mesh::state
