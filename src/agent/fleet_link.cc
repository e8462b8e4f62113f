#include "agent/fleet_link.hh"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "agent/fleet_accept.hh"
#include "apply/cycle.hh"
#include "fleet/bodies.hh"
#include "fleet/etcd.hh"
#include "fleet/node_signed.hh"
#include "fleet/restart_slots.hh"
#include "state/store.hh"
#include "trust/signing.hh"
#include "util/clock.hh"
#include "util/digest.hh"
#include "util/duration.hh"
#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::agent {

namespace {

using namespace std::chrono_literals;

// etcd could not be asked for a declaration's bytes: no verdict on the value.
struct BodyUnavailable : Error {
  using Error::Error;
};

}  // namespace

FleetLink::FleetLink(FleetOptions options, std::string stateDir, Logger& log,
                     std::function<void()> wake)
    : o_(std::move(options)),
      stateDir_(std::move(stateDir)),
      nodeKey_(trust::NodeKey::loadOrCreate(stateDir_)),
      log_(log),
      wake_(std::move(wake)),
      keys_{o_.cluster},
      declarationKey_(keys_.declaration(o_.node)),
      ttl_(fleet::kHeartbeatTtl) {
  // The highest serial applied before this agent started (by an earlier agent or
  // `apply`); from now on every serial this node applies comes through here. Read
  // once: the watcher never opens the store while a cycle may be creating it.
  try {
    if (auto store = state::Store::openIfExists(stateDir_))
      if (auto h = store->highestSerial()) {
        appliedSerial_ = h->serial;
        if (auto g = store->generationDeclaration(h->generation))
          appliedDigest_ = Digest::ofBytes(g->text).str();
      }
  } catch (const std::exception& e) {
    log_.log(Level::Warning, std::string("cannot read the serial applied last: ") + e.what());
  }
  // The first client: its configuration (etcdConfig()) carries the members every other
  // client of this link shares, so that the watch, the heartbeat and the reads use one
  // member and move together.
  fleet::EtcdConfig c = o_.connection;
  c.endpoint = o_.endpoint;
  if (c.spreadBy.empty()) c.spreadBy = o_.node;
  slotsEtcd_ = std::make_unique<fleet::EtcdClient>(c, kRequestTimeout);
  slots_ = std::make_unique<fleet::RestartSlots>(*slotsEtcd_, keys_, o_.node);
}

FleetLink::~FleetLink() {
  stop();
}

AcceptedDeclaration FleetLink::check(const std::string& value, int64_t revision) {
  const std::string where = fmt::format("etcd:{}@{}", declarationKey_, revision);
  ReplayFloor floor{appliedSerial_, appliedDigest_};
  std::optional<fleet::Statement> inForce;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (inForce_) {
      inForce = inForce_->statement;
      if (!floor.serial || inForce->serial >= *floor.serial)
        floor = {inForce->serial, inForce->declarationDigest};
    }
  }
  // The declaration's bytes, stored once by digest (the loaded cache carries them inline).
  const BodyFetcher fetch = [this](const std::string& digest) -> std::optional<std::string> {
    try {
      return fleet::readBody(*slotsEtcd_, keys_, digest);  // whole or in chunks
    } catch (const InputError&) {
      throw;  // a manifest that does not add up: the value's fault, refused
    } catch (const Error& e) {
      throw BodyUnavailable(
          std::string(e.what()));  // etcd's fault, not the value's: judged again later
    }
  };
  return acceptPushed(value, revision, where, o_, floor, inForce, fetch);
}

std::optional<AcceptedDeclaration> FleetLink::loadCached() {
  std::optional<state::Store::FleetDeclaration> cached;
  try {
    auto store = state::Store::openIfExists(stateDir_);
    if (!store) return std::nullopt;
    cached = store->fleetDeclaration(declarationKey_);
  } catch (const std::exception& e) {
    log_.log(Level::Warning, std::string("cannot read the cached pushed "
                                         "declaration: ") +
                                 e.what());
    return std::nullopt;
  }
  if (!cached) return std::nullopt;
  try {
    auto a = check(cached->envelope, cached->revision);
    std::lock_guard<std::mutex> guard(mutex_);
    // Named as etcd holds it: the statement and signature, the bytes stored by digest.
    auto asPut = fleet::decodePushed(cached->envelope, declarationKey_);
    asPut.text.clear();
    inForce_ = InForce{a.statement, fleet::valueDigest(fleet::encodePushed(asPut))};
    lastJudged_ = inForce_->value;
    return a;
  } catch (const Error& e) {
    if (std::string(e.what()).find("before signed statements") != std::string::npos) {
      // Decided: an old-format cache is not converted; the node takes what etcd holds.
      log_.info(fmt::format(
          "the cached pushed declaration (revision {}) is in the format before signed "
          "statements; not using it: the node takes its declaration from etcd (push it again "
          "with this mesh-host if etcd holds the old format too)",
          cached->revision));
      return std::nullopt;
    }
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
  // No thread ends the process on bad data: each loop treats any exception as a failed
  // round (reported, retried with backoff), and what would still escape is reported here.
  watcher_ = std::thread([this, resumeAfter] {
    guardedThread("watching the pushed declaration", [&] { watchLoop(resumeAfter); });
  });
  heartbeat_ = std::thread(
      [this] { guardedThread("publishing the node's status", [&] { heartbeatLoop(); }); });
}

void FleetLink::guardedThread(const char* what, const std::function<void()>& loop) {
  try {
    loop();
  } catch (const std::exception& e) {
    log_.error(fmt::format("mesh-host: stopped {} in etcd: {}", what, e.what()));
  } catch (...) {
    log_.error(fmt::format("mesh-host: stopped {} in etcd: an unknown exception", what));
  }
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

void FleetLink::refuse(int64_t revision, const std::string& value, const std::string& reason) {
  log_.error("mesh-host: refused the pushed declaration: " + reason +
                 "\nmesh-host: the last accepted declaration stays in force",
             {{"revision", revision}, {"key", declarationKey_}});
  // What the statement claims, unverified: for the status only.
  std::optional<int64_t> serial;
  std::string digest;
  try {
    const auto st = fleet::peekStatement(fleet::decodePushed(value, declarationKey_), "");
    serial = st.serial;
    digest = st.declarationDigest;
  } catch (const Error&) {
  }
  std::lock_guard<std::mutex> guard(mutex_);
  refusal_ = fleet::NodeStatus::Refusal{
      revision, serial, reason, unixNowMs(), fleet::valueDigest(value), digest};
  statusDirty_ = true;
  ++statusVersion_;
  changed_.notify_all();
}

void FleetLink::consider(const std::string& value, int64_t revision) {
  const std::string id = fleet::valueDigest(value);
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (id == lastJudged_) return;  // judged already (a re-read after reconnecting)
    lastJudged_ = id;
  }
  try {
    auto a = check(value, revision);
    const auto& st = a.statement;
    log_.info(fmt::format("pushed declaration accepted: serial {} ({}), pushed by {} to {} "
                          "(revision {})",
                          st.serial, fleet::shortDigest(st.declarationDigest), st.pushedBy,
                          st.selector.text(), revision),
              {{"revision", revision},
               {"serial", st.serial},
               {"digest", st.declarationDigest},
               {"pushed_at_ms", st.pushedAtMs}});
    {
      std::lock_guard<std::mutex> guard(mutex_);
      inForce_ = InForce{st, id};
      pending_ = std::move(a);
      if (refusal_) {
        refusal_.reset();
        statusDirty_ = true;
        ++statusVersion_;
        changed_.notify_all();
      }
    }
    wake_();
  } catch (const BodyUnavailable&) {
    std::lock_guard<std::mutex> guard(mutex_);
    lastJudged_.clear();
    throw;                             // the watcher backs off and reads the key again
  } catch (const std::exception& e) {  // not only Error: bad data never ends the thread
    refuse(revision, value, e.what());
  }
}

void FleetLink::beat() {
  std::lock_guard<std::mutex> guard(mutex_);
  beatWanted_ = true;
  changed_.notify_all();
}

fleet::EtcdConfig FleetLink::etcdConfig() const {
  return slotsEtcd_->config();
}

void FleetLink::noteLinked(bool watching, bool published, const std::string& unreachable) {
  bool news = false;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    watching_ = watching_ || watching;
    published_ = published_ || published;
    if (!unreachable.empty() && unreachable_.empty()) unreachable_ = unreachable;
    if (!readiness_ && watching_ && published_) {
      readiness_ = fmt::format("watching {} in etcd, status published", declarationKey_);
      news = true;
    } else if (!readiness_ && !unreachable_.empty()) {
      // Not waiting for etcd to come back: the node converges to what it has meanwhile.
      readiness_ = "etcd unreachable (" + unreachable_.substr(0, unreachable_.find('\n')) +
                   "); running the last accepted declaration, retrying";
      news = true;
    }
  }
  if (news) wake_();
}

std::optional<std::string> FleetLink::readiness() {
  std::lock_guard<std::mutex> guard(mutex_);
  return readiness_;
}

// Convergence by content: the first cycle that ran the declaration in force (its
// digest and serial) is the one that applied it; later cycles only keep it so.
void FleetLink::noteAppliedCycle(fleet::NodeStatus& status) {
  if (status.cycle <= 0) return;
  const std::string key =
      status.declarationDigest + "#" + (status.serial ? std::to_string(*status.serial) : "-");
  if (key != appliedKey_) {
    appliedKey_ = key;
    appliedCycle_ = fleet::appliedCycleOf(status);
  }
  status.appliedCycle = appliedCycle_;
}

void FleetLink::publish(fleet::NodeStatus status) {
  std::lock_guard<std::mutex> guard(mutex_);
  status.node = o_.node;
  status.cluster = o_.cluster;
  status.version = o_.version;
  status.pid = ::getpid();
  status.intervalMs = o_.interval.count();
  noteAppliedCycle(status);
  status_ = std::move(status);
  statusDirty_ = true;
  ++statusVersion_;
  changed_.notify_all();
}

}  // namespace mesh::agent
