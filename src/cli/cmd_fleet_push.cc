// `mesh-host fleet push`: parses the options and prints; the push itself (the lock, the
// checks, the signed statement, the conditional puts, --wait) is fleet/push.hh.
// Behaviour and output: docs/fleet.md.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.hh"
#include "cli/fleet_common.hh"
#include "cli/output.hh"
#include "fleet/etcd.hh"
#include "fleet/push.hh"
#include "fleet/push_each.hh"
#include "fleet/rollout.hh"
#include "util/duration.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/text_safe.hh"

namespace mesh::cli {

using nlohmann::json;

void FleetPushOptions::addTo(CLI::App& cmd) {
  cmd.add_option("DECL", declaration,
                 "the declaration (TOML) to push; it needs a serial (or --each DIR)");
  cmd.add_option("--each", each,
                 "push DIR/<node>.toml to each such node, in one push: one serial (every file's), "
                 "one signed statement per distinct text, one history record; in place of DECL, "
                 "--node and --nodes")
      ->option_text("DIR");
  cmd.add_option("--key", key, "the operator key file (mesh-host key init --operator FILE)")
      ->option_text("FILE")
      ->required();
  cmd.add_option("--node", node, "a node to push to; repeatable; like --nodes, takes a LIST too")
      ->option_text("NAME")
      ->allow_extra_args(false);
  cmd.add_option("--nodes", nodes,
                 "comma-separated node names and globs (web-*); a glob matches the nodes etcd "
                 "knows and must match at least one")
      ->option_text("LIST")
      ->allow_extra_args(false);
  cmd.add_option("--max-parallel-restarts", maxParallelRestarts,
                 "at most this many nodes restart one service at a time (default 0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->option_text("K")
      ->default_str("0");
  cmd.add_option("--wait", wait,
                 "then wait up to this long (500ms, 30s, 5m) until every node's status carries "
                 "the pushed digest and serial; exit 1 when one refused it, failed or did not get "
                 "there in time (default: no wait)")
      ->option_text("DURATION");
  cmd.add_option("--lock-timeout", lockTimeout,
                 "how long to wait while another push holds the cluster's push lock before "
                 "failing with nothing pushed (default 30s)")
      ->option_text("DURATION")
      ->default_str("30s");
  cmd.add_option("--canary", canary,
                 "roll out in waves: push to this many nodes first (the selected nodes in name "
                 "order), then wave after wave once each wave stayed healthy; halts at the first "
                 "node that fails, churns, crashes a service, refuses the value or misses "
                 "--healthy-deadline (the nodes not reached keep their declaration)")
      ->option_text("N");
  cmd.add_option("--wave", wave,
                 "with --canary: nodes per wave after the canary, a count (3) or a share of the "
                 "selected nodes (25%) (default 1)")
      ->option_text("K|P%");
  cmd.add_option("--min-healthy", minHealthy,
                 "with --canary: how long each node of a wave must stay healthy after applying "
                 "it: every service running, none started again or restarted by a crash, none "
                 "unhealthy, nothing failed or churning (default 10s)")
      ->option_text("DURATION");
  cmd.add_option("--healthy-deadline", healthyDeadline,
                 "with --canary: how long a wave may take to get healthy before the rollout "
                 "halts (default 5m; more than --min-healthy)")
      ->option_text("DURATION");
  cmd.add_flag("--auto-revert", autoRevert,
               "with --canary: when the rollout halts, the nodes it reached get their previous "
               "declaration back, with a new serial (serial + 1), recorded as a revert");
}

namespace {

void sayLine(const std::string& line) {
  printLine(line);
  std::fflush(stdout);  // `push --wait` shows what it pushed before it waits
}

void warnLine(const std::string& line) {
  printLine("mesh-host: " + line, stderr);
  std::fflush(stderr);
}

fleet::PushRequest requestOf(const FleetOptions& f, const FleetPushOptions& p) {
  fleet::PushRequest r;
  r.cluster = f.cluster;
  fleet::checkFleetName(f.cluster, "--cluster");
  r.maxParallelRestarts = p.maxParallelRestarts;
  r.lockTimeout = parseDuration(p.lockTimeout, "--lock-timeout");
  if (!p.each.empty()) {
    if (!p.declaration.empty() || !p.node.empty() || !p.nodes.empty())
      throw InputError(
          "fleet push --each DIR pushes DIR/<node>.toml to each node: give no DECL, --node or "
          "--nodes with it");
    r.each = fleet::readEachDir(p.each);
    r.declarationPath = p.each;
    return r;
  }
  if (p.declaration.empty())
    throw InputError("fleet push: give the declaration to push (DECL), or --each DIR");
  for (const auto& v : p.node) r.selector.add(v, "--node");
  for (const auto& v : p.nodes) r.selector.add(v, "--nodes");
  if (r.selector.items.empty())
    throw InputError("fleet push: name the nodes to push to with --node NAME or --nodes LIST");
  r.declarationPath = p.declaration;
  std::optional<std::string> text;
  try {
    text = readFile(p.declaration);
  } catch (const SysError& e) {
    throw InputError("cannot read declaration {}: {}", p.declaration, e.what());
  }
  if (!text) throw InputError("declaration {} does not exist", p.declaration);
  r.text = std::move(*text);
  return r;
}

}  // namespace

// A push with --canary (fleet/rollout.hh): in cmd_fleet_rollout.cc.
int runFleetRolloutPush(const FleetOptions& f, const FleetPushOptions& p,
                        fleet::PushRequest request);

int runFleetPush(const FleetOptions& f, const FleetPushOptions& p) {
  const bool rollout = p.canary != 0 || !p.wave.empty() || !p.minHealthy.empty() ||
                       !p.healthyDeadline.empty() || p.autoRevert;
  if (rollout) return runFleetRolloutPush(f, p, requestOf(f, p));
  const auto request = requestOf(f, p);
  std::optional<Millis> waitFor;
  if (!p.wait.empty()) waitFor = parseDuration(p.wait, "--wait");
  const auto key = trust::OperatorKey::load(p.key);

  auto config = etcdConfigOf(f);
  // Through a leader election, calls keep trying as long as a push waits for the lock.
  config.retryWithin = request.lockTimeout;
  fleet::EtcdClient client(config);
  fleet::PushEvents events;
  events.warn = warnLine;
  events.progress = [](const fleet::PushedNode& n) {
    if (n.result == fleet::PushedNode::Result::Conflict)
      warnLine(fmt::format("node {}: {}", n.node, n.detail));
  };
  auto report = fleet::push(client, key, request, events);
  if (!f.json)
    for (const auto& n : report.nodes) {
      if (n.result == fleet::PushedNode::Result::Unchanged)
        sayLine(fmt::format("unchanged {}: serial {} already pushed", n.node, report.serial));
      else if (n.result == fleet::PushedNode::Result::Pushed)
        sayLine(fmt::format("pushed {}: serial {} (revision {}){}", n.node, report.serial,
                            n.revision,
                            report.texts > 0 ? ", " + fleet::shortDigest(n.digest) : ""));
    }

  // Statuses count when they verify against enrollments this key signed (or --trust).
  if (waitFor) {
    std::vector<trust::OperatorPublicKey> trusted;
    if (!f.trust.trust.empty()) trusted = f.trust.load();
    trusted.push_back(key.publicKey());
    fleet::waitForNodes(client, fleet::FleetKeys{f.cluster}, report, *waitFor, trusted);
    // The outcome counts go into the push's record (fleet history); informational only.
    try {
      if (!fleet::recordOutcomes(client, key, report))
        warnLine(
            fmt::format("the record of this push ({}) was trimmed by newer pushes; its "
                        "outcomes are not recorded",
                        report.recordKey));
    } catch (const Error& e) {
      warnLine(fmt::format("cannot record this push's outcomes: {}", e.what()));
    }
  }
  size_t targets = 0, applied = 0, conflicts = 0;
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : report.nodes) {
    const bool conflict = n.result == fleet::PushedNode::Result::Conflict;
    conflicts += conflict;
    targets += !conflict;
    applied += !conflict && n.outcome == fleet::PushedNode::Outcome::Applied;
    nlohmann::json j = {{"node", n.node},
                        {"result", fleet::resultName(n.result)},
                        {"serial", report.serial},
                        {"digest", n.digest}};
    if (!conflict) j["revision"] = n.revision;
    if (waitFor && !conflict) {
      std::string outcome = fleet::outcomeName(n.outcome);
      if (n.outcome == fleet::PushedNode::Outcome::TimedOut) outcome = "timed_out";
      j["outcome"] = outcome;
      j["detail"] = n.detail;
      if (!f.json)
        sayLine(fmt::format("{} {}: {}", fleet::outcomeName(n.outcome), n.node, n.detail));
    }
    nodes.push_back(std::move(j));
  }
  if (f.json) {
    nlohmann::json out = {
        {"cluster", f.cluster},         {"declaration", p.each.empty() ? p.declaration : p.each},
        {"serial", report.serial},      {"digest", report.digest},
        {"pushed_by", report.pushedBy}, {"waited", waitFor.has_value()},
        {"nodes", std::move(nodes)}};
    std::puts(jsonOut(out).c_str());
  } else if (waitFor) {
    sayLine(fmt::format("{} of {} node(s) applied serial {} ({})", applied, targets, report.serial,
                        report.texts > 0 ? fmt::format("{} text(s), one per node", report.texts)
                                         : fleet::shortDigest(report.digest)));
  }
  const bool allApplied = !waitFor || applied == targets;
  return allApplied && conflicts == 0 ? kExitOk : kExitFailed;
}

}  // namespace mesh::cli
