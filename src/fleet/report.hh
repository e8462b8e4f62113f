// A node's report of its last cycle that did something: every resource that was not
// `unchanged` (id, kind, outcome, reason, and for a file the diff of what changed), the
// counts, and the serials the node applied over time. The status (fleet/protocol.hh) says
// how a node stands; the report says what its last change was, for `fleet serve`'s node
// page. The agent puts it, signed by the node key like its status (fleet/node_signed.hh):
//
//   /mesh/<cluster>/reports/<node>   NodeReport, no lease: out of the nodes prefix, so that
//                                    `fleet status` (readFleet) never reads it
//
// only after a cycle that changed something or failed, and only when it says something new
// (saysNothingNew): an idle node, or one failing the same way cycle after cycle, writes
// nothing. A report is bounded
// (kReportMaxBytes): diffs are cut first, then outcomes left out, and it says so (`cut`).
// No diff shows a secret: the cycle makes them by the rule `mesh-host plan` follows (a
// credential, or a file not readable by all, shows only that it changed), and a
// credential's outcome carries no diff at all here either way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/protocol.hh"

namespace mesh::fleet {

inline constexpr std::string_view kReportType = "mesh-host node report v1";
inline constexpr std::size_t kReportMaxBytes = 256 * 1024;
// How many applied serials a report carries (the newest).
inline constexpr std::size_t kReportHistory = 50;

std::string reportsPrefix(const FleetKeys& keys);                       // "/mesh/<c>/reports/"
std::string reportKey(const FleetKeys& keys, const std::string& node);  // reportsPrefix() + node

struct NodeReport {
  std::string node, cluster;
  int64_t cycle = 0;
  int64_t atMs = 0;  // unix ms the cycle finished
  std::optional<int64_t> serial;
  std::string declarationDigest;
  int64_t created = 0, updated = 0, unchanged = 0, removed = 0, released = 0, skipped = 0,
          failed = 0;
  struct Outcome {
    std::string id, kind, outcome, reason, detail;
    bool restarted = false;
    std::string diff;      // "" none (a file's only; never a credential's)
    bool diffCut = false;  // the diff was cut to fit
    bool operator==(const Outcome&) const = default;
  };
  std::vector<Outcome> outcomes;  // every resource that was not unchanged, in apply order
  std::string cut;                // what was cut to fit kReportMaxBytes, "" nothing
  // What the node applied when, oldest first: one entry per serial (or digest) change.
  struct Applied {
    std::optional<int64_t> serial;
    std::string declarationDigest;
    int64_t cycle = 0;
    int64_t atMs = 0;
    bool operator==(const Applied&) const = default;
  };
  std::vector<Applied> applied;
  bool operator==(const NodeReport&) const = default;
};

// Whether `now` says nothing that `last` (the report put before) does not: the same but for
// the cycle's number and time, or — a cycle that changed nothing — the same failures (ids,
// outcomes, reasons) of the same declaration. Then `last` stays: it keeps the change (with
// its diffs) that came with those failures.
bool saysNothingNew(const NodeReport& last, const NodeReport& now);

// Adds this report's own serial to its history, carried on from `previous` (the report put
// before, if any): a new entry only when the serial or digest differs from the newest one.
void carryHistory(NodeReport& r, const std::optional<NodeReport>& previous);

// The JSON text (unsigned), at most kReportMaxBytes less room for a signature: diffs cut
// first, then outcomes left out, `cut` saying what.
std::string encodeReport(NodeReport r);
// Throws InputError naming `where` when `text` is not a node report.
NodeReport decodeReport(std::string_view text, const std::string& where);

}  // namespace mesh::fleet
