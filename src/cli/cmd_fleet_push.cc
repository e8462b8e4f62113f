// `mesh-host fleet push`: signs a declaration and puts it to nodes' declaration keys in
// etcd, optionally waiting (--wait) until they applied it. Keys and JSON:
// fleet/protocol.hh; behaviour and output: docs/fleet.md.
#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "agent/duration.hh"
#include "cli/commands.hh"
#include "cli/fleet_common.hh"
#include "decl/parse.hh"
#include "fleet/etcd.hh"
#include "fleet/protocol.hh"
#include "trust/signing.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::cli {

using nlohmann::json;

void FleetPushOptions::addTo(CLI::App& cmd) {
  cmd.add_option("DECL", declaration, "the declaration (TOML) to push; it needs a serial")
      ->required();
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
                 "then wait up to this long (500ms, 30s, 5m) until every node applied it; exit "
                 "1 when one refused it, failed or did not get there in time (default: no wait)")
      ->option_text("DURATION");
}

namespace {

void printLine(const std::string& line) {
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);  // `push --wait` shows what it pushed before it waits
}

bool isGlob(const std::string& s) {
  return s.find_first_of("*?[") != std::string::npos;
}

// The names and globs of --node and --nodes, each value split at commas; names checked.
struct TargetSpec {
  std::vector<std::string> names, globs;
};

TargetSpec targetSpecOf(const FleetPushOptions& p) {
  TargetSpec spec;
  const auto add = [&spec](const std::string& value, const std::string& option) {
    size_t start = 0;
    while (true) {
      const size_t comma = value.find(',', start);
      const std::string item = value.substr(start, comma - start);
      if (isGlob(item)) {
        spec.globs.push_back(item);
      } else {
        fleet::checkFleetName(item, option);
        spec.names.push_back(item);
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  };
  for (const auto& v : p.node) add(v, "--node");
  for (const auto& v : p.nodes) add(v, "--nodes");
  if (spec.names.empty() && spec.globs.empty())
    throw InputError("fleet push: name the nodes to push to with --node NAME or --nodes LIST");
  return spec;
}

// The target nodes, sorted: the names, and the known nodes each glob matches.
std::vector<std::string> resolveTargets(const TargetSpec& spec,
                                        const std::map<std::string, NodeKeys>& known,
                                        const std::string& cluster) {
  std::set<std::string> targets(spec.names.begin(), spec.names.end());
  std::vector<std::string> empty;
  for (const auto& glob : spec.globs) {
    bool matched = false;
    for (const auto& [node, keys] : known)
      if (::fnmatch(glob.c_str(), node.c_str(), 0) == 0) {
        targets.insert(node);
        matched = true;
      }
    if (!matched) empty.push_back(glob);
  }
  if (!empty.empty())
    throw InputError(
        "--nodes: {} matches no node known in cluster {} ({} known); name a new node "
        "explicitly, or see mesh-host fleet status",
        fmt::format("\"{}\"", fmt::join(empty, "\", \"")), cluster, known.size());
  return {targets.begin(), targets.end()};
}

// Parses the declaration as a node would (users and groups are the node's to check), so
// that a broken one is refused before anything is pushed; returns its serial.
int64_t checkDeclaration(const std::string& path, const std::string& text,
                         const std::vector<std::string>& targets) {
  decl::ParseOptions po;
  po.node = targets.front();  // a declared `node` must name the target
  const auto d = decl::parseDeclaration(text, path, po);
  if (d.node)
    for (const auto& t : targets)
      if (t != *d.node)
        throw InputError(
            "declaration {} is for node '{}' (node = …) but is pushed to node '{}' too; push it "
            "to '{}' alone, or remove `node` to push it to many",
            path, *d.node, t, *d.node);
  if (!d.serial)
    throw InputError(
        "declaration {} has no serial; a pushed declaration needs one so that nodes can refuse "
        "a replayed older one: add serial = N (higher than the last one pushed)",
        path);
  return *d.serial;
}

// One target node: what it holds and what push does to it.
struct Target {
  std::string node;
  bool unchanged = false;    // the same text with the same serial is already pushed
  int64_t revision = 0;      // of our put, or of the identical declaration already there
  int64_t readRevision = 0;  // of the declaration there when checked (0: none); put only on it
  // --wait: "applied", "failed", "refused" or "timed out"; "" while waiting.
  std::string outcome;
  std::string detail;
};

// Replay and overwrite rules for one node; returns the refusal, "" when the push may go.
std::string checkOverwrite(Target& t, const std::optional<fleet::EtcdKeyValue>& current,
                           const std::string& text, int64_t serial, int64_t maxParallel) {
  if (!current) return "";
  t.readRevision = current->modRevision;
  fleet::PushedDeclaration was;
  try {
    was = fleet::decodePushed(current->value, current->key);
  } catch (const InputError& e) {
    std::fprintf(stderr, "mesh-host: %s; it will be replaced\n", e.what());
    return "";
  }
  if (!was.serial || *was.serial < serial) return "";
  if (*was.serial > serial)
    return fmt::format(
        "node {}: serial {} is older than serial {} already pushed (revision {}); a node would "
        "refuse it as a replay: push serial {} or more",
        t.node, serial, *was.serial, current->modRevision, *was.serial + 1);
  if (was.text != text)
    return fmt::format(
        "node {}: serial {} was already pushed (revision {}) with different text; bump serial to "
        "{} to push this one",
        t.node, serial, current->modRevision, serial + 1);
  t.unchanged = true;
  t.revision = current->modRevision;
  if (was.maxParallelRestarts != maxParallel)
    std::fprintf(stderr,
                 "mesh-host: node %s keeps max_parallel_restarts %lld from the earlier push of "
                 "serial %lld; bump serial to change it\n",
                 t.node.c_str(), static_cast<long long>(was.maxParallelRestarts),
                 static_cast<long long>(serial));
  return "";
}

// What a node's status says of the declaration put at `t.revision`; false while the node
// has not got that far.
bool judge(Target& t, const fleet::NodeStatus& s) {
  if (s.revision >= t.revision) {
    t.outcome = isFailing(s) ? "failed" : "applied";
    t.detail = fmt::format(
        "serial {} at revision {} (cycle {}: {} created, {} updated, {} unchanged, {} removed, "
        "{} failed)",
        serialText(s.serial), s.revision, s.cycle, s.created, s.updated, s.unchanged, s.removed,
        s.failed);
    for (const auto& [id, reason] : s.failing) t.detail += fmt::format("; {}: {}", id, reason);
    if (!s.cycleError.empty()) t.detail += "; cycle error: " + s.cycleError;
    return true;
  }
  if (s.refused && s.refused->revision >= t.revision) {
    t.outcome = "refused";
    t.detail = fmt::format("revision {}: {}", s.refused->revision, s.refused->reason);
    return true;
  }
  t.detail = fmt::format("its status shows revision {} (serial {}), not yet {}", s.revision,
                         serialText(s.serial), t.revision);
  return false;
}

// Waits, through a watch on the nodes prefix, until every target's status shows its
// revision applied or refused, or `limit` passes.
void waitForNodes(fleet::EtcdClient& client, const fleet::FleetKeys& keys,
                  std::vector<Target>& targets, agent::Millis limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::map<std::string, Target*> pending;
  for (auto& t : targets) {
    pending.emplace(t.node, &t);
    t.detail = "no status: the node is down or never started";
  }
  const auto see = [&](const std::string& node, const std::string& value, const std::string& key) {
    const auto it = pending.find(node);
    if (it == pending.end()) return;
    try {
      if (judge(*it->second, fleet::decodeStatus(value, key))) pending.erase(it);
    } catch (const InputError& e) {
      it->second->detail = e.what();  // a status we cannot read: keep waiting for a good one
    }
  };
  const auto read = [&] {
    const auto range = client.getPrefix(keys.nodesPrefix());
    for (const auto& [node, k] : nodesIn(range, keys))
      if (k.status) see(node, k.status->value, k.status->key);
    return range.revision + 1;
  };
  int64_t from = read();
  while (!pending.empty()) {
    const auto left =
        std::chrono::duration_cast<agent::Millis>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    try {
      const bool done = client.watch(
          keys.nodesPrefix(), from,
          [&](const std::vector<fleet::EtcdEvent>& events) {
            for (const auto& ev : events) {
              from = std::max(from, ev.kv.modRevision + 1);
              const auto split = keys.splitNodeKey(ev.kv.key);
              if (ev.type == fleet::EtcdEvent::Type::Put && split && split->second == "status")
                see(split->first, ev.kv.value, ev.kv.key);
            }
            return !pending.empty();
          },
          left, fleet::EtcdClient::WatchScope::Prefix);
      if (!done) break;  // timed out
    } catch (const fleet::EtcdCompacted&) {
      from = read();  // the history is gone: read what is there now, watch on from it
    }
  }
  for (auto& [node, t] : pending) {
    t->outcome = "timed out";
    t->detail = fmt::format("after {}: {}", agent::formatDuration(limit), t->detail);
  }
}

}  // namespace

int runFleetPush(const FleetOptions& f, const FleetPushOptions& p) {
  const auto keys = keysOf(f);
  const auto spec = targetSpecOf(p);
  std::optional<agent::Millis> waitFor;
  if (!p.wait.empty()) waitFor = agent::parseDuration(p.wait, "--wait");
  std::optional<std::string> text;
  try {
    text = readFile(p.declaration);
  } catch (const SysError& e) {
    throw InputError("cannot read declaration {}: {}", p.declaration, e.what());
  }
  if (!text) throw InputError("declaration {} does not exist", p.declaration);
  const auto key = trust::OperatorKey::load(p.key);

  fleet::EtcdClient client(endpointOf(f));
  const auto known = nodesIn(client.getPrefix(keys.nodesPrefix()), keys);
  const auto names = resolveTargets(spec, known, f.cluster);
  const int64_t serial = checkDeclaration(p.declaration, *text, names);

  // Every rule is checked for every node before the first put: a refusal pushes nothing.
  std::vector<Target> targets;
  std::vector<std::string> refusals;
  for (const auto& node : names) {
    Target t;
    t.node = node;
    const auto it = known.find(node);
    auto refusal = checkOverwrite(t, it == known.end() ? std::nullopt : it->second.declaration,
                                  *text, serial, p.maxParallelRestarts);
    if (!refusal.empty()) refusals.push_back(std::move(refusal));
    targets.push_back(std::move(t));
  }
  if (!refusals.empty()) throw InputError(fmt::format("{}", fmt::join(refusals, "\n")));

  fleet::PushedDeclaration pushed;
  pushed.text = *text;
  pushed.signature = trust::signatureText(key, *text);
  pushed.serial = serial;
  pushed.maxParallelRestarts = p.maxParallelRestarts;
  pushed.pushedAtMs = nowMs();
  pushed.pushedBy = key.publicKey().text();
  const std::string value = fleet::encodePushed(pushed);
  // Each put is conditional on the declaration the checks above read: a push that
  // raced another one in between is not overwritten blindly.
  std::vector<Target> conflicts;
  for (auto it = targets.begin(); it != targets.end();) {
    Target& t = *it;
    if (!t.unchanged) {
      auto rev = client.txnPutIfUnchanged(keys.declaration(t.node), value, t.readRevision);
      if (!rev) {
        std::fprintf(stderr,
                     "mesh-host: node %s: its declaration changed after it was checked (another "
                     "push?); nothing was put there: look at fleet status and push again\n",
                     t.node.c_str());
        conflicts.push_back(std::move(t));
        it = targets.erase(it);
        continue;
      }
      t.revision = *rev;
    }
    if (!f.json)
      printLine(t.unchanged ? fmt::format("unchanged {}: serial {} already pushed", t.node, serial)
                            : fmt::format("pushed {}: serial {} (revision {})", t.node, serial,
                                          t.revision));
    ++it;
  }

  if (waitFor) waitForNodes(client, keys, targets, *waitFor);
  int notApplied = 0;
  json nodes = json::array();
  for (const auto& t : targets) {
    notApplied += waitFor && t.outcome != "applied";
    json j = {{"node", t.node},
              {"result", t.unchanged ? "unchanged" : "pushed"},
              {"serial", serial},
              {"revision", t.revision}};
    if (waitFor) {
      j["outcome"] = t.outcome == "timed out" ? "timed_out" : t.outcome;
      j["detail"] = t.detail;
    }
    nodes.push_back(std::move(j));
    if (waitFor && !f.json) printLine(fmt::format("{} {}: {}", t.outcome, t.node, t.detail));
  }
  for (const auto& t : conflicts)
    nodes.push_back({{"node", t.node}, {"result", "conflict"}, {"serial", serial}});
  if (f.json) {
    json out = {{"cluster", f.cluster},
                {"declaration", p.declaration},
                {"serial", serial},
                {"pushed_by", pushed.pushedBy},
                {"waited", waitFor.has_value()},
                {"nodes", std::move(nodes)}};
    std::puts(out.dump().c_str());
  } else if (waitFor) {
    printLine(fmt::format("{} of {} node(s) applied serial {}", targets.size() - notApplied,
                          targets.size(), serial));
  }
  return notApplied > 0 || !conflicts.empty() ? kExitFailed : kExitOk;
}

}  // namespace mesh::cli
