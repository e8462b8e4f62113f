#include "fleet/push.hh"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "decl/parse.hh"
#include "fleet/batch_put.hh"
#include "fleet/bodies.hh"
#include "fleet/push_lock.hh"
#include "fleet/rollout_record.hh"
#include "trust/replay.hh"
#include "trust/signing.hh"
#include "util/clock.hh"
#include "util/digest.hh"
#include "util/error.hh"

namespace mesh::fleet {

namespace {

// The target nodes, sorted: the names, and the known nodes each glob matches.
// A name under the nodes prefix that is not a node name (an etcd writer's) is skipped,
// the count said: a node would never take a statement for it.
std::vector<std::string> resolveTargets(const Selector& selector,
                                        const std::map<std::string, NodeKeys>& known,
                                        const std::string& cluster, const PushEvents& events) {
  std::set<std::string> targets;
  for (const auto& n : selector.names()) targets.insert(n);
  std::vector<std::string> empty;
  std::set<std::string> invalid;
  for (const auto& glob : selector.globs()) {
    const Selector one{{glob}};
    bool matched = false;
    for (const auto& [node, keys] : known)
      if (one.matches(node)) {
        try {
          checkFleetName(node, "node");
        } catch (const InputError&) {
          invalid.insert(node);
          continue;
        }
        targets.insert(node);
        matched = true;
      }
    if (!matched) empty.push_back(glob);
  }
  if (!invalid.empty() && events.warn)
    events.warn(
        fmt::format("--nodes: skipped {} name(s) under {} that are not node names (written outside "
                    "mesh-host?)",
                    invalid.size(), FleetKeys{cluster}.nodesPrefix()));
  if (!empty.empty())
    throw InputError(
        "--nodes: {} matches no node known in cluster {} ({} known); name a new node "
        "explicitly, or see mesh-host fleet status",
        fmt::format("\"{}\"", fmt::join(empty, "\", \"")), cluster, known.size());
  if (targets.empty())
    throw InputError("fleet push: name the nodes to push to with --node NAME or --nodes LIST");
  return {targets.begin(), targets.end()};
}

// Parses the declaration as a node would (users and groups are the node's to check), so
// that a broken one is refused before anything is pushed; returns its serial. One that
// names {node} is parsed as each target sees it ({node} in a path, say).
int64_t checkDeclaration(const std::string& path, const std::string& text,
                         const std::vector<std::string>& targets, const std::string& cluster) {
  decl::ParseOptions po;
  po.node = targets.front();  // a declared `node` must name the target
  po.cluster = cluster;
  const auto d = decl::parseDeclaration(text, path, po);
  if (text.find("{node}") != std::string::npos)
    for (std::size_t i = 1; i < targets.size(); ++i) {
      po.node = targets[i];
      (void)decl::parseDeclaration(text, path, po);
    }
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

// What to push instead of `serial`: the next one, unless there is none.
std::string higherThan(int64_t serial) {
  if (serial == std::numeric_limits<int64_t>::max())
    return fmt::format("no serial is higher than {}: that node can take no new declaration",
                       serial);
  return fmt::format("push serial {} or more", serial + 1);
}

// The statement at a node's key, when it counts for push's checks: this push's key
// signed it, for this cluster and a selector matching this node. Anything else (an
// unsigned or foreign value, one copied from another node's key, a value in the old
// format) does not count: the node would refuse it too, and the push replaces it.
// `verified`: the values found good so far, by their bytes — the nodes of one earlier push
// hold the same value, so a push to 10,000 nodes checks one signature, not 10,000.
using Verified = std::map<std::string, Statement, std::less<>>;

std::optional<Statement> countedStatement(const std::string& node, const EtcdKeyValue& kv,
                                          const std::string& cluster,
                                          const trust::OperatorPublicKey& pushing,
                                          const PushEvents& events, Verified& verified) {
  const auto warn = [&](const std::string& why) {
    if (events.warn)
      events.warn(fmt::format("node {}: {}; push does not count it and replaces it", node, why));
  };
  auto it = verified.find(kv.value);
  if (it == verified.end()) {
    try {
      it = verified
               .emplace(kv.value,
                        verifySignedStatement(decodePushed(kv.value, kv.key), kv.key, {pushing}))
               .first;
    } catch (const InputError& e) {
      warn(e.what());
      return std::nullopt;
    }
  }
  {
    const auto& st = it->second;
    if (st.cluster != cluster || !st.selector.matches(node)) {
      warn(
          fmt::format("{} holds a statement signed for {} in cluster {}, not for this node "
                      "(copied from another key?)",
                      kv.key, st.selector.text(), st.cluster));
      return std::nullopt;
    }
    return st;
  }
}

struct Plan {
  std::string node;
  std::optional<EtcdKeyValue> there;
  bool unchanged = false;
};

// Replay and overwrite rules for one node, on signed data only; returns the refusal,
// "" when the push may go.
std::string checkOverwrite(Plan& plan, const Statement& ours, const std::string& cluster,
                           const trust::OperatorPublicKey& pushing, const PushEvents& events,
                           Verified& verified) {
  if (!plan.there) return "";
  const auto was = countedStatement(plan.node, *plan.there, cluster, pushing, events, verified);
  if (!was) return "";
  const int64_t revision = plan.there->modRevision;
  switch (trust::judgeReplay(ours.serial, ours.declarationDigest,
                             {was->serial, was->declarationDigest})) {
    case trust::Replay::Newer:
      return "";
    case trust::Replay::Older:
      return fmt::format(
          "node {}: serial {} is older than serial {} already pushed (revision {}); a node would "
          "refuse it as a replay: {}",
          plan.node, ours.serial, was->serial, revision, higherThan(was->serial));
    case trust::Replay::Conflict:
      return fmt::format(
          "node {}: serial {} was already pushed (revision {}) with different text ({}); {}",
          plan.node, ours.serial, revision, shortDigest(was->declarationDigest),
          ours.serial == std::numeric_limits<int64_t>::max()
              ? higherThan(ours.serial)
              : fmt::format("bump serial to {} to push this one", ours.serial + 1));
    case trust::Replay::Same:
    case trust::Replay::Unserialed:  // a statement always has a serial
      break;
  }
  plan.unchanged = true;
  if (was->maxParallelRestarts != ours.maxParallelRestarts && events.warn)
    events.warn(fmt::format(
        "node {} keeps max_parallel_restarts {} from the earlier push of serial {}; bump the "
        "serial to change it",
        plan.node, was->maxParallelRestarts, ours.serial));
  return "";
}

// What a push needs of the nodes etcd knows: their names (any key under a node's prefix,
// listed without values) and the value at each declaration key, read at the listing's
// revision — not every status and enrollment (most of the bytes under the prefix). The
// other keys of a node are there with empty values: a push reads only `declaration`.
std::map<std::string, NodeKeys> knownForPush(EtcdClient& etcd, const FleetKeys& keys) {
  EtcdRange range = etcd.keysUnder(keys.nodesPrefix());
  std::vector<std::string> declarations;
  for (const auto& kv : range.kvs)
    if (const auto split = keys.splitNodeKey(kv.key); split && split->second == "declaration")
      declarations.push_back(kv.key);
  auto values = readKeysAt(etcd, declarations, range.revision, kPushStreams);
  std::erase_if(range.kvs, [&](const EtcdKeyValue& kv) {
    const auto split = keys.splitNodeKey(kv.key);
    return split && split->second == "declaration";
  });
  for (auto& kv : values) range.kvs.push_back(std::move(kv));
  return nodesIn(range, keys);
}

// Deletes the declaration bodies no node's statement names any more (still under the
// push lock, so no push is writing one). A node that was about to read the body of a
// statement just replaced refuses it and takes the new one on its next event. `named`
// holds what the targets name now; the other nodes name what `known` read, unless a
// conflict says a key changed behind the push's back: then every key is read again.
void dropUnusedBodies(EtcdClient& etcd, const FleetKeys& keys,
                      const std::map<std::string, NodeKeys>& known,
                      const std::vector<std::string>& targets, std::set<std::string> named,
                      bool conflicts) {
  const auto nameOf = [&](const std::optional<EtcdKeyValue>& kv) {
    if (!kv) return;
    try {
      named.insert(peekStatement(decodePushed(kv->value, kv->key), kv->key).declarationDigest);
    } catch (const InputError&) {
      // Not a statement: it names no body.
    }
  };
  if (conflicts) {
    for (const auto& [node, k] : knownForPush(etcd, keys)) nameOf(k.declaration);
  } else {
    for (const auto& [node, k] : known)
      if (!std::binary_search(targets.begin(), targets.end(), node)) nameOf(k.declaration);
  }
  dropBodiesExcept(etcd, keys, named);
}

}  // namespace

const char* resultName(PushedNode::Result r) {
  switch (r) {
    case PushedNode::Result::Pushed:
      return "pushed";
    case PushedNode::Result::Unchanged:
      return "unchanged";
    case PushedNode::Result::Conflict:
      return "conflict";
  }
  return "?";
}

const char* outcomeName(PushedNode::Outcome o) {
  switch (o) {
    case PushedNode::Outcome::Waiting:
      return "waiting";
    case PushedNode::Outcome::Applied:
      return "applied";
    case PushedNode::Outcome::Failed:
      return "failed";
    case PushedNode::Outcome::Refused:
      return "refused";
    case PushedNode::Outcome::TimedOut:
      return "timed out";
  }
  return "?";
}

std::string eachDigest(const std::vector<PushedNode>& nodes) {
  std::vector<std::pair<std::string, std::string>> lines;
  for (const auto& n : nodes) lines.emplace_back(n.node, n.digest);
  std::sort(lines.begin(), lines.end());
  std::string text;
  for (const auto& [node, digest] : lines) text += node + " " + digest + "\n";
  return Digest::ofBytes(text).str();
}

namespace {

// The texts of a push: one for every target, or (--each) one per distinct text, each
// with the nodes that get it and the statement signed for them.
struct PushText {
  std::string path, text, digest;
  std::vector<std::string> nodes;  // sorted
  Statement statement;
  std::string value;  // the signed value put at its nodes' keys
};

// --each: the named nodes, each once, and the distinct texts. Every text is parsed as its
// node would; all must carry the same serial.
std::vector<PushText> textsOfEach(const PushRequest& request, std::vector<std::string>& names,
                                  int64_t& serial) {
  std::map<std::string, PushText> byDigest;
  std::map<std::string, std::string> pathOf;             // node -> file
  std::optional<std::pair<int64_t, std::string>> first;  // serial, file
  for (const auto& e : request.each) {
    checkFleetName(e.node, e.path);
    if (const auto [it, fresh] = pathOf.emplace(e.node, e.path); !fresh)
      throw InputError("--each: {} and {} are both for node {}; give each node one file",
                       it->second, e.path, e.node);
    checkBodySize(e.path, e.text);
    const int64_t s = checkDeclaration(e.path, e.text, {e.node}, request.cluster);
    if (!first) first.emplace(s, e.path);
    if (s != first->first)
      throw InputError(
          "--each: {} has serial {} but {} has serial {}; one push has one serial: give every "
          "file the same serial = N",
          e.path, s, first->second, first->first);
    const std::string digest = Digest::ofBytes(e.text).str();
    auto& t = byDigest[digest];
    if (t.nodes.empty()) {
      t.path = e.path;
      t.text = e.text;
      t.digest = digest;
    }
    t.nodes.push_back(e.node);
  }
  if (!first) throw InputError("--each: no declaration to push");
  serial = first->first;
  for (const auto& [node, path] : pathOf) names.push_back(node);
  std::vector<PushText> texts;
  for (auto& [digest, t] : byDigest) {
    std::sort(t.nodes.begin(), t.nodes.end());
    texts.push_back(std::move(t));
  }
  return texts;
}

}  // namespace

PushReport push(EtcdClient& etcd, const trust::OperatorKey& key, const PushRequest& request,
                const PushEvents& events) {
  checkFleetName(request.cluster, "--cluster");
  if (request.each.empty()) checkBodySize(request.declarationPath, request.text);
  const FleetKeys keys{request.cluster};
  Statement st;
  st.cluster = request.cluster;
  st.pushedBy = key.publicKey().text();
  st.maxParallelRestarts = request.maxParallelRestarts;

  PushLock lock(etcd, keys, st.pushedBy, request.lockTimeout, events.warn);
  const auto rolloutKeeps = guardAgainstRollout(etcd, keys, request.inRollout);
  const auto known = knownForPush(etcd, keys);
  std::vector<std::string> names;
  std::vector<PushText> texts;
  if (request.each.empty()) {
    names = resolveTargets(request.selector, known, request.cluster, events);
    st.serial = checkDeclaration(request.declarationPath, request.text, names, request.cluster);
    PushText t{
        request.declarationPath, request.text, Digest::ofBytes(request.text).str(), names, {}, {}};
    texts.push_back(std::move(t));
  } else {
    texts = textsOfEach(request, names, st.serial);
  }
  std::map<std::string, std::size_t> textOf;  // node -> its text in `texts`
  st.pushedAtMs = unixNowMs();
  for (std::size_t i = 0; i < texts.size(); ++i) {
    auto& t = texts[i];
    for (const auto& n : t.nodes) textOf[n] = i;
    t.statement = st;
    t.statement.declarationDigest = t.digest;
    if (request.each.empty()) {
      t.statement.selector = request.selector;
    } else {
      for (const auto& n : t.nodes) t.statement.selector.items.push_back(n);
    }
  }

  // Every rule is checked for every node before the first put: a refusal pushes nothing.
  std::vector<Plan> plans;
  std::vector<std::string> refusals;
  Verified verified;
  for (const auto& node : names) {
    Plan plan{node, std::nullopt, false};
    if (const auto it = known.find(node); it != known.end()) plan.there = it->second.declaration;
    auto refusal = checkOverwrite(plan, texts[textOf.at(node)].statement, request.cluster,
                                  key.publicKey(), events, verified);
    if (!refusal.empty()) refusals.push_back(std::move(refusal));
    plans.push_back(std::move(plan));
  }
  if (!refusals.empty()) throw InputError(fmt::format("{}", fmt::join(refusals, "\n")));

  std::set<std::string> named = rolloutKeeps;
  for (auto& t : texts) {
    PushedDeclaration pushed;
    pushed.statement = encodeStatement(t.statement);
    pushed.signature = trust::signatureText(key, pushed.statement);
    t.value = encodePushed(pushed);  // the bytes are stored once, by digest
    if (t.value.size() + keys.declaration(t.nodes.back()).size() > kPushTxnBytes)
      throw InputError(
          "the signed statement is {} bytes (its selector lists {} names and globs): over what "
          "one etcd request may carry; name the nodes with fewer, shorter items (globs: web-*)",
          t.value.size(), t.statement.selector.items.size());
    named.insert(t.digest);
  }
  for (std::size_t t = 0; t < texts.size(); ++t)
    if (std::any_of(plans.begin(), plans.end(),
                    [&](const Plan& p) { return !p.unchanged && textOf.at(p.node) == t; }))
      storeBody(etcd, keys, texts[t].digest, texts[t].text);

  PushReport report;
  report.serial = st.serial;
  report.pushedBy = st.pushedBy;
  report.pushedAtMs = st.pushedAtMs;
  report.nodes.resize(plans.size());
  // Per text, the puts of its nodes: puts[t][i] is for plans[planOf[t][i]].
  std::vector<std::vector<ConditionalPut>> puts(texts.size());
  std::vector<std::vector<std::size_t>> planOf(texts.size());
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const auto& plan = plans[i];
    const std::size_t t = textOf.at(plan.node);
    PushedNode& n = report.nodes[i];
    n.node = plan.node;
    n.digest = texts[t].digest;
    if (plan.unchanged) {
      n.result = PushedNode::Result::Unchanged;
      n.revision = plan.there->modRevision;
      n.value = valueDigest(plan.there->value);
      if (events.progress) events.progress(n);
      continue;
    }
    puts[t].push_back({keys.declaration(plan.node), plan.there ? plan.there->modRevision : 0});
    planOf[t].push_back(i);
  }
  if (request.each.empty()) {
    report.digest = texts.front().digest;
    report.selector = texts.front().statement.selector.text();
  } else {
    report.digest = eachDigest(report.nodes);
    report.texts = static_cast<int64_t>(texts.size());
    Selector all;
    for (const auto& n : names) all.items.push_back(n);
    report.selector = all.text();
  }
  if (events.beforePuts) events.beforePuts();
  bool conflicts = false;
  BatchLimits limits;
  limits.ops = kEtcdMaxTxnOps;
  limits.bytes = kPushTxnBytes;
  limits.streams = kPushStreams;
  for (std::size_t t = 0; t < texts.size(); ++t) {
    if (puts[t].empty()) continue;
    const std::string pushedValue = valueDigest(texts[t].value);
    putAllIfUnchanged(
        etcd, puts[t], texts[t].value, limits,
        [&](std::size_t i, int64_t revision) {
          PushedNode& n = report.nodes[planOf[t][i]];
          if (revision != 0) {
            n.revision = revision;
            n.value = pushedValue;
          } else {
            // Only an etcd writer outside fleet push gets here: pushes hold the lock.
            conflicts = true;
            n.result = PushedNode::Result::Conflict;
            n.detail =
                "its declaration changed after it was checked (written outside fleet push?); "
                "nothing was put there: look at fleet status and push again";
          }
          if (events.progress) events.progress(n);
        },
        [&] { lock.keepAlive(); });
  }

  auto [recordKey, recordRevision] = recordPush(etcd, keys, recordOf(report, false), key);
  report.recordKey = std::move(recordKey);
  report.recordRevision = recordRevision;
  dropUnusedBodies(etcd, keys, known, names, std::move(named), conflicts);
  return report;
}

PushRecord recordOf(const PushReport& report, bool waited) {
  PushRecord r;
  r.digest = report.digest;
  r.texts = report.texts;
  r.serial = report.serial;
  r.pushedBy = report.pushedBy;
  r.pushedAtMs = report.pushedAtMs;
  r.selector = report.selector;
  r.nodes = static_cast<int64_t>(report.nodes.size());
  PushRecord::Outcomes o;
  for (const auto& n : report.nodes) {
    r.pushed += n.result == PushedNode::Result::Pushed;
    r.unchanged += n.result == PushedNode::Result::Unchanged;
    r.conflict += n.result == PushedNode::Result::Conflict;
    if (n.result == PushedNode::Result::Conflict) continue;
    o.applied += n.outcome == PushedNode::Outcome::Applied;
    o.failed += n.outcome == PushedNode::Outcome::Failed;
    o.refused += n.outcome == PushedNode::Outcome::Refused;
    o.timedOut += n.outcome == PushedNode::Outcome::TimedOut;
  }
  if (waited) r.outcomes = o;
  return r;
}

bool recordOutcomes(EtcdClient& etcd, const trust::OperatorKey& key, PushReport& report) {
  const bool done =
      updatePushRecord(etcd, report.recordKey, report.recordRevision, recordOf(report, true), key);
  report.recordRevision = 0;  // written once
  return done;
}

}  // namespace mesh::fleet
