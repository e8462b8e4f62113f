// `mesh-host fleet status`: reads every node's keys in one range (one consistent revision),
// judges them (fleet/view.hh) and prints the table, the reasons, the versions and a tally.
// States, behaviour and output: docs/fleet.md.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <utility>

#include "cli/commands.hh"
#include "cli/fleet_common.hh"
#include "cli/output.hh"
#include "cli/time_text.hh"
#include "fleet/etcd.hh"
#include "fleet/statement.hh"
#include "fleet/view.hh"
#include "fleet/view/check_ahead.hh"
#include "fleet/view/json.hh"
#include "util/text_safe.hh"

namespace mesh::cli {

namespace {

using fleet::NodeState;

std::string digestText(const std::string& digest) {
  return digest.empty() ? "-" : fleet::shortDigest(digest);
}

// The table: columns padded to their widest cell. Cells come from etcd (a node's name is
// its key): escaped first (util/text_safe.hh), so that none draws over another row.
void printTable(std::vector<std::vector<std::string>> rows) {
  for (auto& row : rows)
    for (auto& cell : row) cell = shownText(cell);
  std::vector<size_t> widths;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      widths.resize(std::max(widths.size(), row.size()));
      widths[i] = std::max(widths[i], row[i].size());
    }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i)
      line += i + 1 == row.size() ? row[i] : fmt::format("{:<{}}  ", row[i], widths[i]);
    printLine(line);
  }
}

// "versions: 3 node(s) on serial 3 (sha256:77aa01b2c3d4), …", then one line per version
// saying who pushed it and when.
void printVersions(const std::vector<fleet::VersionView>& versions, int64_t now) {
  std::vector<std::string> parts;
  for (const auto& v : versions)
    parts.push_back(v.digest.empty()
                        ? fmt::format("{} node(s) with nothing applied", v.nodes.size())
                        : fmt::format("{} node(s) on serial {} ({})", v.nodes.size(),
                                      serialText(v.serial), fleet::shortDigest(v.digest)));
  printLine(fmt::format("versions: {}", fmt::join(parts, ", ")));
  for (const auto& v : versions) {
    if (v.digest.empty()) continue;
    const std::string head =
        fmt::format("  serial {} ({}):", serialText(v.serial), fleet::shortDigest(v.digest));
    if (v.pushedBy.empty())
      printLine(fmt::format("{} pushed by: not known (no node's statement names it now)", head));
    else
      printLine(fmt::format("{} pushed by {} at {} ({}){}", head, fleet::shortKey(v.pushedBy),
                            isoTime(v.pushedAtMs), agoText(v.pushedAtMs, now),
                            v.pushedVerified ? "" : ", not signed by a --trust key"));
  }
}

// Where `fleet status` keeps what it verified between runs: $XDG_CACHE_HOME/mesh-host, else
// ~/.cache/mesh-host; "" (verify everything) when neither is known.
std::string memoDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/mesh-host";
  const char* home = std::getenv("HOME");
  if (home && home[0] == '/') return std::string(home) + "/.cache/mesh-host";
  return "";
}

}  // namespace

int runFleetStatus(const FleetOptions& f) {
  const auto keys = keysOf(f);
  const auto trusted = f.trust.load();
  fleet::EtcdClient client(etcdConfigOf(f));
  // Statuses change rarely and enrollments almost never: most signatures were checked by
  // the run before (docs/fleet.md, "What fleet status remembers"). The memo is loaded
  // (its key made, on a first run) while etcd answers, and what it lacks is checked into
  // it as the range arrives; what is not checked by the end of the read is checked after.
  // The memo and the judged fleet (tens of thousands of strings at 10,000 nodes) are left
  // to the process's exit, not freed one at a time: runFleetStatus runs once a process.
  auto& memo = *new fleet::VerifiedMemo;
  const std::string dir = memoDir();
  bool kept = false;
  fleet::CheckAhead ahead(keys, trusted, memo, [&] { kept = !dir.empty() && memo.persistIn(dir); });
  auto range =
      fleet::readFleet(client, keys, [&](const fleet::EtcdKeyValue& kv) { ahead.see(kv); });
  ahead.stop();
  // The range is not needed after: its values are moved into the judgement, not copied.
  const auto& view =
      *new fleet::FleetView(fleet::viewFleet(std::move(range), keys, trusted, nowMs(), &memo));
  // The memo is written while the answer is: it only spares work, so an answer cut
  // short before it is written costs the next run its checks, nothing more.
  auto saving = std::async(std::launch::async, [&] {
    if (kept) memo.save();
  });

  if (f.json) {
    std::puts(fleet::fleetJsonText(view).c_str());
  } else if (view.nodes.empty()) {
    printLine(fmt::format("cluster {}: no nodes (nothing under {} at revision {})", f.cluster,
                          keys.nodesPrefix(), view.revision));
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"NODE", "WANTED", "APPLIED", "DIGEST", "STATE", "FAILED", "CHURNING", "LAST SEEN"}};
    std::vector<std::string> details;
    for (const auto& v : view.nodes) {
      const auto* s = v.status ? &*v.status : nullptr;
      rows.push_back(
          {v.node, serialText(v.wanted ? std::optional<int64_t>(v.wanted->serial) : std::nullopt),
           serialText(s ? s->serial : std::nullopt), digestText(s ? s->declarationDigest : ""),
           fleet::stateName(v.state), s ? std::to_string(s->failed) : "-",
           s ? std::to_string(s->churning.size()) : "-", agoText(v.lastSeenMs(), view.nowMs)});
      for (const auto& r : v.reasons) details.push_back(v.node + ": " + r);
    }
    printTable(rows);
    if (!details.empty()) std::puts("");
    for (const auto& d : details) printLine(d);
    std::string tally;
    for (auto state : {NodeState::Forged, NodeState::Unenrolled, NodeState::Down, NodeState::Behind,
                       NodeState::Refused, NodeState::Failing, NodeState::Churning})
      if (view.count(state))
        tally += fmt::format(", {} {}", view.count(state), fleet::stateName(state));
    std::puts("");
    printVersions(view.versions, view.nowMs);
    printLine(fmt::format("cluster {} at revision {}: {} node(s), {} converged{}", f.cluster,
                          view.revision, view.nodes.size(), view.count(NodeState::Converged),
                          tally));
  }
  return view.allConverged() ? kExitOk : kExitFailed;
}

}  // namespace mesh::cli
