// How much of its past the store keeps (store/retention.cc): the bounds on cycles,
// their history and declaration generations, and what is never trimmed whatever
// the bounds say. docs/state-store.md, "Bounds", is the operator's view of it.
#pragma once

#include <cstdint>
#include <set>
#include <string>

namespace mesh::state {

struct Retention {
  // Generations: the newest this many (by number) are kept; older ones go.
  int64_t keepGenerations = 50;
  // Cycles: the newest this many cycle rows (by number) are kept; older ones go.
  int64_t keepCycles = 10000;
  // Age: a cycle started, or a generation last applied, more than this many days
  // ago goes too, unless it is among the newest minCycles / minGenerations.
  int64_t keepDays = 30;
  int64_t minCycles = 100;
  int64_t minGenerations = 5;
  // At most this many rows of each table are deleted by one trim: a cycle pays a
  // bounded cost, and a store far over its bounds (an upgrade) comes down over
  // the next cycles.
  int64_t batch = 64;

  // "the last 50 generations, and those applied within 30 days".
  std::string generationsText() const;
  // "the last 10000 cycles, and those within 30 days".
  std::string cyclesText() const;
  // Throws InputError naming the option when a bound is out of range.
  void validate() const;
};

// What one trim did.
struct TrimReport {
  int64_t cycles = 0;       // cycle rows deleted
  int64_t history = 0;      // history rows deleted (of those cycles, or past kHistoryCycles)
  int64_t generations = 0;  // generations deleted, each with its text
  int64_t pagesFreed = 0;   // pages given back to the file system (incremental vacuum)
  bool more = false;        // a batch was full: the next trim goes on
};

}  // namespace mesh::state
