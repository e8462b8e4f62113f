// `mesh-host fleet status`: reads every node's keys in one range (one consistent revision),
// judges them (fleet/view.hh) and prints the table, the reasons, the versions and a tally
// (fleet/view/text.hh), or the JSON (fleet/view/json.hh).
// States, behaviour and output: docs/fleet.md.

#include <cstdio>
#include <cstdlib>
#include <future>
#include <utility>

#include "cli/commands.hh"
#include "cli/fleet_common.hh"
#include "cli/output.hh"
#include "fleet/etcd.hh"
#include "fleet/rollout_record.hh"
#include "fleet/view.hh"
#include "fleet/view/check_ahead.hh"
#include "fleet/view/json.hh"
#include "fleet/view/text.hh"
#include "util/clock.hh"
#include "util/leak_at_exit.hh"

namespace mesh::cli {

namespace {

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
  auto& memo = leakAtExit<fleet::VerifiedMemo>();
  const std::string dir = memoDir();
  bool kept = false;
  fleet::CheckAhead ahead(keys, trusted, memo, [&] { kept = !dir.empty() && memo.persistIn(dir); });
  auto range =
      fleet::readFleet(client, keys, [&](const fleet::EtcdKeyValue& kv) { ahead.see(kv); });
  ahead.stop();
  // The range is not needed after: its values are moved into the judgement, not copied.
  auto& view = leakAtExit<fleet::FleetView>(
      fleet::viewFleet(std::move(range), keys, trusted, unixNowMs(), &memo));
  view.rollout = fleet::currentRollout(client, keys);
  // The memo is written while the answer is: it only spares work, so an answer cut
  // short before it is written costs the next run its checks, nothing more.
  auto saving = std::async(std::launch::async, [&] {
    if (kept) memo.save();
  });

  if (f.json)
    std::puts(fleet::fleetJsonText(view).c_str());
  else
    for (const auto& line : fleet::fleetTextLines(view)) printLine(line);
  return view.allConverged() ? kExitOk : kExitFailed;
}

}  // namespace mesh::cli
