// `mesh-host fleet history`: the pushes recorded in etcd (fleet/push_history.hh), newest
// first, as a table or --json. Records are informational (anyone who can write etcd can
// write one); with --trust a record signed by one of those keys, as its pushed_by, is
// marked verified. Behaviour and output: docs/fleet.md, docs/json.md.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.hh"
#include "cli/fleet_common.hh"
#include "cli/output.hh"
#include "cli/time_text.hh"
#include "fleet/push_history.hh"
#include "fleet/rollout_record.hh"
#include "fleet/statement.hh"
#include "fleet/view/json.hh"
#include "util/error.hh"
#include "util/text_safe.hh"

namespace mesh::cli {

using nlohmann::json;

void FleetHistoryOptions::addTo(CLI::App& cmd) {
  cmd.add_option(
         "--limit", limit,
         fmt::format("show at most the N newest pushes (default 20; etcd keeps the last {})",
                     fleet::kKeptPushes))
      ->option_text("N")
      ->default_str("20");
}

namespace {

// "mesh-op:AbCdEfGh…": enough of a key to tell the operators of one fleet apart.
std::string shortKey(const std::string& key) {
  constexpr std::size_t kShown = 8;
  const auto colon = key.find(':');
  if (colon == std::string::npos || key.size() <= colon + 1 + kShown) return key;
  return key.substr(0, colon + 1 + kShown) + "…";
}

std::string resultsText(const fleet::PushRecord& r) {
  std::string text = fmt::format("{} pushed, {} unchanged", r.pushed, r.unchanged);
  if (r.conflict) text += fmt::format(", {} conflict", r.conflict);
  if (r.outcomes)
    text += fmt::format("; {} applied, {} failed, {} refused, {} timed out", r.outcomes->applied,
                        r.outcomes->failed, r.outcomes->refused, r.outcomes->timedOut);
  if (r.revertOf) text += fmt::format("; revert of serial {}", *r.revertOf);
  if (!r.rollout.empty()) text += "; " + r.rollout;
  return text;
}

json recordJson(const fleet::PushHistoryEntry& e) {
  json j = {{"key", e.key}, {"verified", e.verified ? json(*e.verified) : json(nullptr)}};
  if (!e.record) {
    j["problem"] = e.problem;
    return j;
  }
  const auto& r = *e.record;
  j.update(
      {{"digest", r.digest},
       {"serial", r.serial},
       {"pushed_by", r.pushedBy},
       {"pushed_at_ms", r.pushedAtMs},
       {"pushed_at", isoTime(r.pushedAtMs)},
       {"selector", r.selector},
       {"nodes", r.nodes},
       {"results", {{"pushed", r.pushed}, {"unchanged", r.unchanged}, {"conflict", r.conflict}}},
       {"outcomes", nullptr}});
  if (r.texts > 0) j["texts"] = r.texts;  // --each: one text per node, this many distinct
  if (!r.rollout.empty()) j["rollout"] = r.rollout;  // a rollout's wave: where it stood
  if (r.revertOf) j["revert_of"] = *r.revertOf;      // a rollout's revert
  if (r.outcomes)
    j["outcomes"] = {{"applied", r.outcomes->applied},
                     {"failed", r.outcomes->failed},
                     {"refused", r.outcomes->refused},
                     {"timed_out", r.outcomes->timedOut}};
  return j;
}

}  // namespace

int runFleetHistory(const FleetOptions& f, const FleetHistoryOptions& h) {
  if (h.limit < 1)
    throw InputError("--limit {}: give 1 or more (etcd keeps the last {} pushes)", h.limit,
                     fleet::kKeptPushes);
  const auto keys = keysOf(f);
  std::vector<trust::OperatorPublicKey> trusted;
  if (!f.trust.trust.empty()) trusted = f.trust.load();
  fleet::EtcdClient client(etcdConfigOf(f));
  const auto entries =
      fleet::readPushHistory(client, keys, static_cast<std::size_t>(h.limit), trusted);
  const auto rollout = fleet::currentRollout(client, keys);

  if (f.json) {
    json pushes = json::array();
    for (const auto& e : entries) pushes.push_back(recordJson(e));
    std::puts(jsonOut(json{{"schema", kJsonSchema},
                           {"cluster", f.cluster},
                           {"pushes", std::move(pushes)},
                           {"rollout", fleet::rolloutJson(rollout)}})
                  .c_str());
    return kExitOk;
  }
  if (rollout) printLine(shownText(fleet::rolloutLine(*rollout)));
  if (entries.empty()) {
    printLine("no push recorded in cluster " + f.cluster);
    return kExitOk;
  }
  const bool marking = !trusted.empty();
  std::printf("%-20s  %-19s  %6s  %-19s  %-20s  %5s  %s%s\n", "WHEN", "BY", "SERIAL", "DIGEST",
              "SELECTOR", "NODES", "RESULT", marking ? "  SIGNATURE" : "");
  for (const auto& e : entries) {
    const std::string mark =
        !marking ? "" : (e.verified && *e.verified ? "  verified" : "  NOT VERIFIED");
    if (!e.record) {
      printLine(e.key + ": " + e.problem + mark);
      continue;
    }
    const auto& r = *e.record;
    // Cells from etcd escaped before they are padded, so that the columns line up.
    printLine(fmt::format("{:<20}  {:<19}  {:>6}  {:<19}  {:<20}  {:>5}  {}{}",
                          isoTime(r.pushedAtMs), shownText(shortKey(r.pushedBy)), r.serial,
                          r.texts > 0 ? fmt::format("--each: {} text(s)", r.texts)
                                      : shownText(fleet::shortDigest(r.digest)),
                          shownText(r.selector), r.nodes, resultsText(r), mark));
  }
  return kExitOk;
}

}  // namespace mesh::cli
