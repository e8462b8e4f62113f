// FleetLink's life and what it shares between its threads: the link made (the node
// key, the serial applied last, the clients' members), its two threads started and
// stopped, what the agent takes from it and hands it (accepted declarations, statuses,
// beats) and when it is ready. The threads' loops are in fleet_link_watch.cc and
// fleet_link_heartbeat.cc, the judging of pushed values in fleet_link_judge.cc, the
// restart slots in fleet_link_slots.cc.
#include "agent/fleet_link.hh"

#include "agent/node_report.hh"

#include <unistd.h>

#include <utility>

#include <fmt/format.h>

#include "fleet/node_signed.hh"
#include "fleet/restart_slots.hh"
#include "state/store.hh"
#include "util/digest.hh"

namespace mesh::agent {

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
  status.services = services_;
  status_ = std::move(status);
  statusDirty_ = true;
  ++statusVersion_;
  changed_.notify_all();
}

void FleetLink::setServices(std::vector<fleet::NodeStatus::Service> services) {
  std::lock_guard<std::mutex> guard(mutex_);
  services_ = std::move(services);
  if (servicesHeld_ || status_.services == services_) return;
  status_.services = services_;
  statusDirty_ = true;
  ++statusVersion_;
  changed_.notify_all();
}

void FleetLink::holdServices() {
  std::lock_guard<std::mutex> guard(mutex_);
  servicesHeld_ = true;
}

void FleetLink::releaseServices() {
  std::lock_guard<std::mutex> guard(mutex_);
  servicesHeld_ = false;
  if (status_.services == services_) return;
  status_.services = services_;
  statusDirty_ = true;
  ++statusVersion_;
  changed_.notify_all();
}

}  // namespace mesh::agent
