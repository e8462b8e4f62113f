// The rollout's driver (fleet/rollout.hh): start, resume, abort, and the loop over waves.
#include "fleet/rollout.hh"

#include <fmt/format.h>
#include <unistd.h>

#include <limits>
#include <map>
#include <optional>
#include <set>

#include "decl/parse.hh"
#include "fleet/batch_put.hh"
#include "fleet/bodies.hh"
#include "fleet/push_lock.hh"
#include "fleet/rollout_wait.hh"
#include "fleet/statement.hh"
#include "fleet/view.hh"
#include "util/clock.hh"
#include "util/digest.hh"
#include "util/error.hh"

namespace mesh::fleet {

namespace {

std::string driverText() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return fmt::format("pid {} on {}", ::getpid(), host);
}

std::string waveName(const RolloutRecord& r, int64_t wave) {
  return fmt::format("wave {} of {}{}", wave + 1, r.waves.size(), wave == 0 ? " (canary)" : "");
}

std::string joined(const std::vector<std::string>& nodes) {
  return fmt::format("{}", fmt::join(nodes, ", "));
}

// The selected nodes, sorted: the names, and the known nodes each glob matches (a glob
// matching none is bad input, as for a push).
std::vector<std::string> targetsOf(EtcdClient& etcd, const FleetKeys& keys,
                                   const Selector& selector) {
  std::set<std::string> targets;
  for (const auto& n : selector.names()) targets.insert(n);
  const auto known = nodesIn(etcd.keysUnder(keys.nodesPrefix()), keys);
  for (const auto& glob : selector.globs()) {
    const Selector one{{glob}};
    bool matched = false;
    for (const auto& [node, k] : known)
      if (one.matches(node)) {
        try {
          checkFleetName(node, "node");
        } catch (const InputError&) {
          continue;
        }
        targets.insert(node);
        matched = true;
      }
    if (!matched)
      throw InputError("--nodes: \"{}\" matches no node known in cluster {} ({} known)", glob,
                       keys.cluster, known.size());
  }
  if (targets.empty())
    throw InputError("fleet push: name the nodes to push to with --node NAME or --nodes LIST");
  return {targets.begin(), targets.end()};
}

// What each target holds now, when a key in `trusted` signed it for that node: what a
// revert puts back (never a value an etcd writer could have planted). A body carried
// inline is stored by digest, where a revert reads it.
std::map<std::string, PreviousDeclaration> previousOf(
    EtcdClient& etcd, const FleetKeys& keys, const std::vector<std::string>& targets,
    const std::vector<trust::OperatorPublicKey>& trusted, const RolloutEvents& events) {
  std::map<std::string, PreviousDeclaration> previous;
  std::vector<std::string> wanted;
  for (const auto& n : targets) {
    previous[n] = {};
    wanted.push_back(keys.declaration(n));
  }
  for (const auto& kv : readKeysAt(etcd, wanted, 0, kPushStreams)) {
    const auto split = keys.splitNodeKey(kv.key);
    if (!split) continue;
    try {
      const auto pushed = decodePushed(kv.value, kv.key);
      const auto st = verifySignedStatement(pushed, kv.key, trusted);
      if (st.cluster != keys.cluster || !st.selector.matches(split->first))
        throw InputError("{}: a statement for another node or cluster", kv.key);
      if (!pushed.text.empty() && Digest::ofBytes(pushed.text).str() == st.declarationDigest)
        storeBody(etcd, keys, st.declarationDigest, pushed.text);
      previous[split->first] = {st.declarationDigest, st.serial};
    } catch (const InputError& e) {
      if (events.warn)
        events.warn(
            fmt::format("{}: what it holds cannot be reverted to ({})", split->first, e.what()));
    }
  }
  return previous;
}

// The driver's hold on the record: every write is conditional on the revision it last
// wrote, so that an abort meanwhile is never overwritten.
struct Driving {
  EtcdClient& etcd;
  const trust::OperatorKey& key;
  FleetKeys keys;
  RolloutRecord record;
  int64_t revision = 0;
  std::vector<trust::OperatorPublicKey> trusted;
  std::chrono::milliseconds lockTimeout;
  const RolloutEvents& events;

  void say(const std::string& line) const {
    if (events.say) events.say(line);
  }
  void warn(const std::string& line) const {
    if (events.warn) events.warn(line);
  }

  // Writes the record; false when it changed meanwhile (then `record` is what is there).
  bool write() {
    record.updatedAtMs = unixNowMs();
    if (const auto rev = putRollout(etcd, keys, record, revision, key)) {
      revision = *rev;
      return true;
    }
    if (const auto e = readRollout(etcd, keys, {})) {
      record = e->record;
      revision = e->revision;
    }
    return false;
  }

  // Whether the record is still as this driver last wrote it (not aborted meanwhile).
  bool stillOurs() {
    const auto e = readRollout(etcd, keys, {});
    return e && e->revision == revision;
  }

  void noteInHistory(const PushReport& report, std::optional<int64_t> revertOf) {
    try {
      PushRecord r = recordOf(report, false);
      r.rollout = rolloutLine(record);
      r.revertOf = revertOf;
      updatePushRecord(etcd, report.recordKey, report.recordRevision, r, key);
    } catch (const Error& e) {
      warn(fmt::format("cannot note the rollout in the push's record: {}", e.what()));
    }
  }

  PushRequest requestFor(PushRequest base) const {
    base.cluster = keys.cluster;
    base.inRollout = true;
    base.maxParallelRestarts = record.options.maxParallelRestarts;
    base.lockTimeout = lockTimeout;
    return base;
  }

  PushEvents pushEvents() {
    PushEvents pe;
    pe.warn = events.warn;
    // Under the push lock, just before the wave is put: an abort written meanwhile stops it.
    pe.beforePuts = [this] {
      if (!stillOurs())
        throw Error("the rollout was aborted or taken over meanwhile: this wave was not pushed");
    };
    return pe;
  }

  // The nodes reached get their previous declaration back, under a new serial, in one
  // push of each node's own text.
  void revert() {
    if (record.serial == std::numeric_limits<int64_t>::max()) {
      warn(fmt::format("no serial is higher than {}: nothing reverted", record.serial));
      return;
    }
    const int64_t serial = record.serial + 1;
    PushRequest pr = requestFor({});
    for (int64_t w = 0; w <= record.wave; ++w)
      for (const auto& node : record.waves[w]) {
        const auto& prev = record.previous[node];
        if (prev.digest.empty()) {
          warn(fmt::format("{} held no declaration before serial {}: it keeps serial {}", node,
                           record.serial, record.serial));
          continue;
        }
        const auto body = readBody(etcd, keys, prev.digest);
        if (!body || Digest::ofBytes(*body).str() != prev.digest) {
          warn(
              fmt::format("the declaration {} held before ({}) is no longer stored: it keeps "
                          "serial {}",
                          node, shortDigest(prev.digest), record.serial));
          continue;
        }
        const std::string where = fmt::format("the declaration {} held before serial {} ({})", node,
                                              record.serial, shortDigest(prev.digest));
        pr.each.push_back({node, where, withSerial(*body, serial, where)});
      }
    if (pr.each.empty()) {
      warn("nothing to revert");
      return;
    }
    const auto report = push(etcd, key, pr, pushEvents());
    record.state = RolloutState::Reverted;
    record.revertSerial = serial;
    noteInHistory(report, record.serial);
    write();
    std::vector<std::string> nodes;
    for (const auto& n : report.nodes) nodes.push_back(n.node);
    say(fmt::format("reverted {} to {} previous declaration with serial {}", joined(nodes),
                    nodes.size() == 1 ? "its" : "their", serial));
  }

  // Pushes and judges wave after wave from record.wave on.
  RolloutRecord drive(const std::string& text, PushLock& driverLock) {
    PushRequest base;
    base.declarationPath = record.declaration;
    base.text = text;
    for (; record.wave < static_cast<int64_t>(record.waves.size()); ++record.wave) {
      const int64_t w = record.wave;
      record.state = RolloutState::Running;
      record.reason.clear();
      if (!write()) return stopped();
      PushRequest pr = requestFor(base);
      for (const auto& n : record.waves[w]) pr.selector.items.push_back(n);
      PushReport report;
      try {
        report = push(etcd, key, pr, pushEvents());
      } catch (const Error&) {
        if (!stillOurs()) return stopped();
        throw;
      }
      say(fmt::format("{}: pushed serial {} to {}", waveName(record, w), record.serial,
                      joined(record.waves[w])));
      const auto outcome = waitForWave(
          etcd, keys, report, record.options, trusted,
          [&] {
            driverLock.keepAlive();
            return stillOurs();
          },
          [&](const std::string& line) { say(waveName(record, w) + ": " + line); });
      if (outcome.kind == WaveOutcome::Kind::Aborted) {
        noteInHistory(report, std::nullopt);
        return stopped();
      }
      if (outcome.kind == WaveOutcome::Kind::Halted) {
        record.state = RolloutState::Halted;
        record.reason = outcome.reason;
        if (!write()) return stopped();
        noteInHistory(report, std::nullopt);
        std::vector<std::string> rest;
        for (auto v = w + 1; v < static_cast<int64_t>(record.waves.size()); ++v)
          rest.insert(rest.end(), record.waves[v].begin(), record.waves[v].end());
        say(fmt::format("halted in {}: {}{}", waveName(record, w), outcome.reason,
                        rest.empty() ? "" : "; not pushed to " + joined(rest)));
        if (record.options.autoRevert) revert();
        return record;
      }
      if (w + 1 == static_cast<int64_t>(record.waves.size())) {
        record.state = RolloutState::Done;
        if (!write()) return stopped();
      }
      noteInHistory(report, std::nullopt);
      say(fmt::format("{}: healthy", waveName(record, w)));
    }
    record.wave = static_cast<int64_t>(record.waves.size()) - 1;
    if (record.state != RolloutState::Done) {
      record.state = RolloutState::Done;
      record.reason.clear();
      if (!write()) return stopped();
    }
    say(fmt::format("rollout of serial {} done: {} node(s) in {} wave(s)", record.serial,
                    record.previous.size(), record.waves.size()));
    return record;
  }

  RolloutRecord stopped() {
    if (const auto e = readRollout(etcd, keys, {})) record = e->record;
    say(fmt::format("the rollout was stopped from elsewhere: {}", rolloutLine(record)));
    return record;
  }
};

PushLock driverLock(EtcdClient& etcd, const FleetKeys& keys, const trust::OperatorKey& key,
                    std::chrono::milliseconds timeout, const RolloutEvents& events) {
  return PushLock(etcd, rolloutDriverKey(keys), "rollout driver lock", key.publicKey().text(),
                  timeout, events.warn);
}

}  // namespace

RolloutRecord startRollout(EtcdClient& etcd, const trust::OperatorKey& key,
                           const RolloutRequest& request, const RolloutEvents& events) {
  const auto& p = request.push;
  checkFleetName(p.cluster, "--cluster");
  const FleetKeys keys{p.cluster};
  if (!p.each.empty())
    throw InputError("a rollout pushes one declaration: --each does not go with --canary");
  const auto targets = targetsOf(etcd, keys, p.selector);
  RolloutRecord r;
  r.waves = planWaves(targets, request.options.canary, request.options.wave);
  r.options = request.options;
  r.options.maxParallelRestarts = p.maxParallelRestarts;
  {
    decl::ParseOptions po;
    po.node = targets.front();
    po.cluster = p.cluster;
    const auto d = decl::parseDeclaration(p.text, p.declarationPath, po);
    if (!d.serial)
      throw InputError(
          "declaration {} has no serial; a pushed declaration needs one so that nodes can "
          "refuse a replayed older one: add serial = N (higher than the last one pushed)",
          p.declarationPath);
    r.serial = *d.serial;
  }
  r.digest = Digest::ofBytes(p.text).str();
  r.declaration = p.declarationPath;
  r.pushedBy = key.publicKey().text();
  r.startedAtMs = unixNowMs();
  r.driver = driverText();

  std::vector<trust::OperatorPublicKey> trusted = request.trusted;
  trusted.push_back(key.publicKey());
  int64_t was = 0;
  std::optional<std::string> before;
  if (const auto got = etcd.get(rolloutKey(keys))) {
    was = got->modRevision;
    before = got->value;
    std::optional<RolloutEntry> e;
    try {
      e = readRollout(etcd, keys, {});
    } catch (const InputError&) {
      // Not a record: replaced.
    }
    if (e && e->record.state == RolloutState::Running)
      throw Error(
          "{} is running (driven by {}): one rollout at a time; see mesh-host fleet rollout "
          "status, resume it if its driver died, or stop it with fleet rollout abort",
          rolloutLine(e->record), e->record.driver);
  }
  // The driver's lock, not waited for: a live driver means a rollout is running.
  auto lock = driverLock(etcd, keys, key, std::chrono::seconds(0), events);
  r.previous = previousOf(etcd, keys, targets, trusted, events);
  Driving d{etcd, key, keys, r, was, trusted, p.lockTimeout, events};
  if (!d.write())
    throw Error("another rollout started meanwhile: {}; nothing was pushed", rolloutLine(d.record));
  try {
    return d.drive(p.text, lock);
  } catch (const InputError&) {
    // The canary push refused it (nothing pushed): the record goes back to what it was.
    if (d.record.wave == 0) {
      if (before)
        etcd.txnPutIfUnchanged(rolloutKey(keys), *before, d.revision);
      else
        etcd.txnDeleteIfUnchanged(rolloutKey(keys), d.revision);
    }
    throw;
  }
}

RolloutRecord resumeRollout(EtcdClient& etcd, const trust::OperatorKey& key,
                            const std::string& cluster,
                            const std::vector<trust::OperatorPublicKey>& trustedKeys,
                            std::chrono::milliseconds lockTimeout, const RolloutEvents& events) {
  checkFleetName(cluster, "--cluster");
  const FleetKeys keys{cluster};
  auto trusted = trustedKeys;
  trusted.push_back(key.publicKey());
  auto lock = driverLock(etcd, keys, key, lockTimeout, events);
  const auto e = readRollout(etcd, keys, trusted);
  if (!e) throw InputError("no rollout in cluster {}: nothing to resume", cluster);
  if (!e->verified || !*e->verified)
    throw InputError(
        "the rollout record of cluster {} is not signed by this key or a --trust key as its "
        "pusher: not resumed (resume with the key that started it)",
        cluster);
  RolloutRecord r = e->record;
  if (r.state != RolloutState::Running && r.state != RolloutState::Halted)
    throw InputError("{}: nothing to resume; push again to roll out anew", rolloutLine(r));
  const auto text = readBody(etcd, keys, r.digest);
  if (!text || Digest::ofBytes(*text).str() != r.digest)
    throw Error("the declaration of serial {} ({}) is no longer stored in etcd: push it again",
                r.serial, shortDigest(r.digest));
  Driving d{etcd, key, keys, r, e->revision, trusted, lockTimeout, events};
  d.record.driver = driverText();
  if (r.state == RolloutState::Halted) {
    d.say(fmt::format("continuing anyway after: {}", r.reason));
    ++d.record.wave;
  } else {
    d.say(fmt::format("resuming in {}", waveName(r, r.wave)));
  }
  return d.drive(*text, lock);
}

RolloutRecord abortRollout(EtcdClient& etcd, const trust::OperatorKey& key,
                           const std::string& cluster, bool revert,
                           std::chrono::milliseconds lockTimeout, const RolloutEvents& events) {
  checkFleetName(cluster, "--cluster");
  const FleetKeys keys{cluster};
  Driving d{etcd, key, keys, {}, 0, {key.publicKey()}, lockTimeout, events};
  {
    // Under the push lock: a driver about to push a wave checks the record under it too,
    // so its wave is either pushed before this abort or not at all.
    PushLock lock(etcd, keys, key.publicKey().text(), lockTimeout, events.warn);
    const auto e = readRollout(etcd, keys, {});
    if (!e) throw InputError("no rollout in cluster {}: nothing to abort", cluster);
    d.record = e->record;
    d.revision = e->revision;
    if (d.record.state != RolloutState::Running && d.record.state != RolloutState::Halted)
      throw InputError("{}: nothing to abort", rolloutLine(d.record));
    d.record.state = RolloutState::Aborted;
    d.record.reason =
        fmt::format("aborted by {} ({})", shortKey(key.publicKey().text()), driverText());
    if (!d.write()) throw Error("the rollout changed while it was aborted: look and try again");
  }
  d.say(rolloutLine(d.record));
  if (revert) d.revert();
  return d.record;
}

}  // namespace mesh::fleet
