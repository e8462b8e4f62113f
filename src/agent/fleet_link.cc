#include "agent/fleet_link.hh"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "agent/duration.hh"
#include "apply/reconcile.hh"
#include "fleet/etcd.hh"
#include "fleet/restart_slots.hh"
#include "state/store.hh"
#include "trust/signing.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::agent {

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A watch is re-established this often even when nothing happens, so that a
// silently dropped connection is noticed.
constexpr auto kWatchRenew = 5min;
constexpr auto kRequestTimeout = 5s;

std::chrono::seconds ttlFor(std::chrono::milliseconds interval) {
  const auto three = std::chrono::duration_cast<std::chrono::seconds>(interval * 3);
  return std::max<std::chrono::seconds>(three, 3s);
}

}  // namespace

FleetLink::FleetLink(FleetOptions options, std::string stateDir, Logger& log,
                     std::function<void()> wake)
    : o_(std::move(options)),
      stateDir_(std::move(stateDir)),
      log_(log),
      wake_(std::move(wake)),
      keys_{o_.cluster},
      declarationKey_(keys_.declaration(o_.node)),
      ttl_(ttlFor(o_.interval)) {
  // The highest serial applied before this agent started (by an earlier agent or
  // `apply`); from now on every serial this node applies comes through here. Read
  // once: the watcher never opens the store while a cycle may be creating it.
  try {
    if (lstatPath(stateDir_ + "/state.db"))
      if (auto h = state::Store::open(stateDir_, state::Store::Access::ReadOnly).highestSerial())
        appliedSerial_ = h->serial;
  } catch (const std::exception& e) {
    log_.log(Level::Warning,
             std::string("mesh-host: warning: cannot read the serial applied last: ") + e.what());
  }
  slotsEtcd_ = std::make_unique<fleet::EtcdClient>(o_.endpoint, kRequestTimeout);
  slots_ = std::make_unique<fleet::RestartSlots>(*slotsEtcd_, keys_, o_.node);
}

FleetLink::~FleetLink() {
  stop();
}

AcceptedDeclaration FleetLink::check(const std::string& value, int64_t revision) {
  const std::string where = fmt::format("etcd:{}@{}", declarationKey_, revision);
  auto pushed = fleet::decodePushed(value, where);
  trust::verifySignedText(where, pushed.text, pushed.signature, where + " (its signature)",
                          o_.trusted);
  AcceptedDeclaration a{o_.parse(pushed.text, where), value, revision, pushed.maxParallelRestarts};
  const auto& serial = a.declaration.serial;
  if (!serial)
    throw InputError("{}: the declaration has no serial; push it with mesh-host fleet push", where);
  std::lock_guard<std::mutex> guard(mutex_);
  std::optional<int64_t> applied = appliedSerial_;
  if (acceptedSerial_ && (!applied || *acceptedSerial_ > *applied)) applied = acceptedSerial_;
  if (applied && *serial < *applied)
    throw InputError(
        "{}: serial {} is older than serial {} this node already has; a replayed declaration is "
        "refused (push a higher serial)",
        where, *serial, *applied);
  return a;
}

std::optional<AcceptedDeclaration> FleetLink::loadCached() {
  std::optional<state::Store::FleetDeclaration> cached;
  try {
    if (!lstatPath(stateDir_ + "/state.db")) return std::nullopt;
    cached = state::Store::open(stateDir_, state::Store::Access::ReadOnly)
                 .fleetDeclaration(declarationKey_);
  } catch (const std::exception& e) {
    log_.log(Level::Warning, std::string("mesh-host: warning: cannot read the cached pushed "
                                         "declaration: ") +
                                 e.what());
    return std::nullopt;
  }
  if (!cached) return std::nullopt;
  try {
    auto a = check(cached->envelope, cached->revision);
    std::lock_guard<std::mutex> guard(mutex_);
    acceptedRevision_ = a.revision;
    acceptedSerial_ = a.declaration.serial;
    return a;
  } catch (const Error& e) {
    log_.error(
        fmt::format("mesh-host: the cached pushed declaration (revision {}) no longer "
                    "passes, not using it: {}",
                    cached->revision, e.what()));
    return std::nullopt;
  }
}

void FleetLink::start(int64_t resumeAfter) {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    status_.node = o_.node;
    status_.cluster = o_.cluster;
    status_.version = o_.version;
    status_.pid = ::getpid();
    status_.intervalMs = o_.interval.count();
    statusDirty_ = true;
    ++statusVersion_;
  }
  watcher_ = std::thread([this, resumeAfter] { watchLoop(resumeAfter); });
  heartbeat_ = std::thread([this] { heartbeatLoop(); });
}

void FleetLink::stop() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  cancel_.store(true);
  changed_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  if (heartbeat_.joinable()) heartbeat_.join();
}

bool FleetLink::pause(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, d, [this] { return stopping_; });
  return !stopping_;
}

std::optional<AcceptedDeclaration> FleetLink::takeAccepted() {
  std::lock_guard<std::mutex> guard(mutex_);
  auto out = std::move(pending_);
  pending_.reset();
  return out;
}

void FleetLink::refuse(int64_t revision, std::optional<int64_t> serial, const std::string& reason) {
  log_.error("mesh-host: refused the pushed declaration: " + reason +
                 "\nmesh-host: the last accepted declaration stays in force",
             {{"revision", revision}, {"key", declarationKey_}});
  std::lock_guard<std::mutex> guard(mutex_);
  acceptedRevision_ = std::max(acceptedRevision_, revision);
  refusal_ = fleet::NodeStatus::Refusal{revision, serial, reason, apply::nowMs()};
  statusDirty_ = true;
  ++statusVersion_;
  changed_.notify_all();
}

void FleetLink::consider(const std::string& value, int64_t revision) {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (revision <= acceptedRevision_) return;  // seen already (a re-read after reconnecting)
  }
  try {
    auto a = check(value, revision);
    log_.info(fmt::format("pushed declaration accepted: revision {}, serial {}", revision,
                          *a.declaration.serial),
              {{"revision", revision}, {"serial", *a.declaration.serial}});
    {
      std::lock_guard<std::mutex> guard(mutex_);
      acceptedRevision_ = revision;
      acceptedSerial_ = a.declaration.serial;
      pending_ = std::move(a);
      if (refusal_) {
        refusal_.reset();
        statusDirty_ = true;
        ++statusVersion_;
        changed_.notify_all();
      }
    }
    wake_();
  } catch (const Error& e) {
    std::optional<int64_t> claimed;
    try {
      claimed = fleet::decodePushed(value, declarationKey_).serial;
    } catch (const Error&) {
    }
    refuse(revision, claimed, e.what());
  }
}

void FleetLink::watchLoop(int64_t resumeAfter) {
  fleet::EtcdClient etcd(o_.endpoint, kRequestTimeout);
  int64_t from = resumeAfter > 0 ? resumeAfter + 1 : 0;  // 0: read the key first
  auto backoff = o_.backoffMin;
  bool down = false;
  while (!cancel_.load()) {
    try {
      if (from == 0 || down) {
        // One range read gives the value and the revision to watch after, so no
        // put between the read and the watch is missed. After an outage it also
        // proves etcd is back; the watch then resumes after the last revision seen
        // (a revision already considered is skipped).
        auto range = etcd.getPrefix(declarationKey_);
        for (const auto& kv : range.kvs)
          if (kv.key == declarationKey_) consider(kv.value, kv.modRevision);
        if (from == 0) from = range.revision + 1;
      }
      if (down) {
        log_.info("etcd at " + o_.endpoint + " reachable again; watching " + declarationKey_ +
                  " from revision " + std::to_string(from));
        down = false;
      }
      etcd.watch(
          declarationKey_, from,
          [&](const std::vector<fleet::EtcdEvent>& events) {
            backoff = o_.backoffMin;
            for (const auto& ev : events) {
              from = std::max(from, ev.kv.modRevision + 1);
              if (ev.type == fleet::EtcdEvent::Type::Put)
                consider(ev.kv.value, ev.kv.modRevision);
              else
                log_.log(Level::Warning,
                         "mesh-host: warning: " + declarationKey_ +
                             " was deleted from etcd; the last accepted declaration stays in "
                             "force",
                         {{"revision", ev.kv.modRevision}});
            }
            return !cancel_.load();
          },
          kWatchRenew, fleet::EtcdClient::WatchScope::Key, &cancel_);
      backoff = o_.backoffMin;  // it ran its course: the connection was good
    } catch (const fleet::EtcdCompacted& e) {
      log_.info("watch of " + declarationKey_ + " from a compacted revision; reading it again");
      from = 0;
    } catch (const Error& e) {
      if (!down)
        log_.log(Level::Warning,
                 std::string("mesh-host: warning: ") + e.what() +
                     "; the last accepted declaration stays in force; retrying with backoff",
                 {{"endpoint", o_.endpoint}});
      down = true;
      if (!pause(backoff)) break;
      backoff = std::min(backoff * 2, o_.backoffMax);
    }
  }
}

void FleetLink::heartbeatLoop() {
  fleet::EtcdClient etcd(o_.endpoint, kRequestTimeout);
  const std::string statusKey = keys_.status(o_.node), seenKey = keys_.seen(o_.node);
  int64_t lease = 0;
  auto nextKeepAlive = Clock::now();
  bool failing = false;  // etcd is unreachable: wait for retryAt, not for news
  auto retryAt = Clock::now();
  auto backoff = o_.backoffMin;
  bool down = false;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    const auto until = failing ? retryAt : nextKeepAlive;
    changed_.wait_until(lock, until, [&] { return stopping_ || (statusDirty_ && !failing); });
    if (stopping_) break;
    const auto now = Clock::now();
    if (failing && now < retryAt) continue;
    if (!statusDirty_ && now < nextKeepAlive) continue;
    fleet::NodeStatus status = status_;
    status.refused = refusal_;
    const uint64_t version = statusVersion_;
    bool mustPut = statusDirty_;
    lock.unlock();
    try {
      if (lease == 0 || etcd.keepAliveOnce(lease) == 0) {
        if (lease != 0) log_.info("the node's lease in etcd had expired; publishing on a new one");
        lease = etcd.grantLease(ttl_.count());
        mustPut = true;
      }
      if (mustPut) {
        status.publishedAtMs = apply::nowMs();
        const std::string text = fleet::encodeStatus(status);
        etcd.put(statusKey, text, lease);
        etcd.put(seenKey, text);
      }
      if (down) log_.info("etcd at " + o_.endpoint + " reachable again; status published");
      down = false;
      failing = false;
      backoff = o_.backoffMin;
      nextKeepAlive = Clock::now() + ttl_ / 3;
      lock.lock();
      if (statusVersion_ == version) statusDirty_ = false;
      continue;
    } catch (const Error& e) {
      if (!down)
        log_.log(Level::Warning,
                 std::string("mesh-host: warning: cannot publish the node's status: ") + e.what() +
                     "; retrying with backoff",
                 {{"endpoint", o_.endpoint}});
      down = true;
      failing = true;
      retryAt = Clock::now() + backoff;
      backoff = std::min(backoff * 2, o_.backoffMax);
    }
    lock.lock();
  }
  lock.unlock();
  // Stopping on purpose: the node reads as down at once, not a TTL later.
  if (lease != 0) {
    try {
      etcd.revoke(lease);
    } catch (const Error&) {
    }
  }
}

void FleetLink::publish(fleet::NodeStatus status) {
  std::lock_guard<std::mutex> guard(mutex_);
  status.node = o_.node;
  status.cluster = o_.cluster;
  status.version = o_.version;
  status.pid = ::getpid();
  status.intervalMs = o_.interval.count();
  status_ = std::move(status);
  statusDirty_ = true;
  ++statusVersion_;
  changed_.notify_all();
}

std::function<std::function<void()>(const std::string&)> FleetLink::restartGate(
    int64_t limit, std::chrono::milliseconds timeout, const std::atomic<bool>* stop) {
  if (limit <= 0) return {};
  return [this, limit, timeout, stop](const std::string& service) -> std::function<void()> {
    const auto started = Clock::now();
    auto slot =
        std::make_shared<fleet::RestartSlots::Slot>(slots_->acquire(service, limit, timeout, stop));
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
    log_.info(fmt::format("restart slot {} taken for {} (at most {} at once, waited {})",
                          slot->key(), service, limit, formatDuration(waited)),
              {{"service", service}, {"slot", slot->key()}, {"waited_ms", waited.count()}});
    return [this, slot, service] {
      try {
        slot->release();
      } catch (const Error& e) {
        log_.log(Level::Warning,
                 fmt::format("mesh-host: warning: releasing the restart slot of {}: {} (it frees "
                             "itself when its lease expires)",
                             service, e.what()));
      }
    };
  };
}

}  // namespace mesh::agent
