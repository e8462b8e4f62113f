#include "fleet/feed.hh"

#include <algorithm>

#include "fleet/view.hh"
#include "fleet/view/json.hh"
#include "util/clock.hh"
#include "util/error.hh"

namespace mesh::fleet {

namespace {

// A watch is renewed this often when nothing happens (a quiet watch costs nothing).
constexpr std::chrono::seconds kWatchRenew{60};
constexpr std::chrono::milliseconds kBackoffMin{100};
constexpr std::chrono::milliseconds kBackoffMax{5000};

}  // namespace

FleetFeed::FleetFeed(EtcdConfig etcd, FleetKeys keys, std::vector<trust::OperatorPublicKey> trusted)
    : config_(std::move(etcd)),
      keys_(std::move(keys)),
      trusted_(std::move(trusted)),
      client_(std::make_unique<EtcdClient>(config_)) {}

FleetFeed::~FleetFeed() {
  stop();
}

void FleetFeed::start() {
  refresh();
  // Each loop reports any exception as the feed's error and carries on; what still
  // escapes (not a std::exception) is reported there too: never std::terminate.
  watcher_ = std::thread([this] { guarded([this] { watchLoop(); }); });
  refresher_ = std::thread([this] { guarded([this] { refreshLoop(); }); });
}

void FleetFeed::guarded(const std::function<void()>& loop) {
  try {
    loop();
  } catch (const std::exception& e) {
    publish(nullptr, std::string("the feed stopped: ") + e.what());
  } catch (...) {
    publish(nullptr, "the feed stopped: an unknown exception");
  }
}

void FleetFeed::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  changed_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  if (refresher_.joinable()) refresher_.join();
}

FleetFeed::Snapshot FleetFeed::latest() const {
  std::lock_guard lock(mutex_);
  return snapshot_;
}

FleetFeed::Snapshot FleetFeed::waitNewer(uint64_t seq, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return stop_ || snapshot_.seq > seq; });
  return snapshot_;
}

void FleetFeed::refresh() {
  auto range = readFleet(*client_, keys_);
  const int64_t revision = range.revision;
  auto view = viewFleet(std::move(range), keys_, trusted_, unixNowMs(), &verified_);
  view.rollout = currentRollout(*client_, keys_);
  auto json = std::make_shared<const std::string>(fleetJsonText(view));
  {
    std::lock_guard lock(mutex_);
    // Two reads may race (the watcher's after a compaction, the refresher's): never let
    // an older one replace a newer.
    if (revision < readRevision_) return;
    readRevision_ = revision;
  }
  publish(std::move(json), "");
}

void FleetFeed::publish(std::shared_ptr<const std::string> json, const std::string& etcdError) {
  {
    std::lock_guard lock(mutex_);
    const bool sameJson = !json || (snapshot_.json && *snapshot_.json == *json);
    if (sameJson && snapshot_.etcdError == etcdError) return;
    if (json) snapshot_.json = std::move(json);
    snapshot_.etcdError = etcdError;
    ++snapshot_.seq;
  }
  changed_.notify_all();
}

void FleetFeed::markDirty() {
  {
    std::lock_guard lock(mutex_);
    dirty_ = true;
  }
  wake_.notify_all();
}

// One watch over the nodes prefix; each batch of events only marks the view dirty (the
// refresher reads it again). After a compaction or an outage: read, then watch from the
// read's revision + 1, so no event between the two is missed.
void FleetFeed::watchLoop() {
  int64_t from = 0;  // 0: read first
  {
    std::lock_guard lock(mutex_);
    from = readRevision_ + 1;  // start() read it
  }
  auto backoff = kBackoffMin;
  while (!stop_) {
    try {
      if (from == 0) {
        refresh();
        std::lock_guard lock(mutex_);
        from = readRevision_ + 1;
      }
      client_->watch(
          keys_.nodesPrefix(), from,
          [&](const std::vector<EtcdEvent>& events) {
            for (const auto& e : events) from = std::max(from, e.kv.modRevision + 1);
            markDirty();
            return !stop_;
          },
          kWatchRenew, EtcdClient::WatchScope::Prefix, &stop_);
      backoff = kBackoffMin;
    } catch (const EtcdCompacted&) {
      from = 0;
    } catch (const std::exception& e) {  // not only etcd's: bad data never ends it
      publish(nullptr, e.what());
      from = 0;
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, backoff, [&] { return stop_.load(); });
      backoff = std::min(backoff * 2, kBackoffMax);
    }
  }
}

// Reads the range kDebounce after the first event of a burst, and every kRefresh anyway.
void FleetFeed::refreshLoop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, kRefresh, [&] { return dirty_ || stop_; });
    if (stop_) break;
    if (dirty_ && wake_.wait_for(lock, kDebounce, [&] { return stop_.load(); })) break;
    dirty_ = false;
    lock.unlock();
    try {
      refresh();
    } catch (const std::exception& e) {  // not only etcd's: bad data never ends it
      publish(nullptr, e.what());
    }
    lock.lock();
  }
}

}  // namespace mesh::fleet
