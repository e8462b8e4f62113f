// The fleet, live: one etcd watch over a cluster's nodes, and after each batch of events
// (debounced) one range read judged into the FleetView JSON (fleet/view.hh), kept as the
// latest for any number of readers. Readers never hold up the watch: each takes the
// newest JSON when it is ready for it, so a slow one skips versions and never delays
// another. `fleet serve` sends it to browsers; docs/fleet.md.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fleet/enroll.hh"
#include "fleet/etcd.hh"
#include "fleet/protocol.hh"
#include "trust/operator_key.hh"

namespace mesh::fleet {

class FleetFeed {
 public:
  // One version of what readers get: the view's JSON text and, while etcd cannot be read,
  // why ("" when it can). `seq` grows with every change of either.
  struct Snapshot {
    uint64_t seq = 0;
    std::shared_ptr<const std::string> json;  // null before the first read
    std::string etcdError;
  };

  // How long after a batch of events the range is read again (one read for a burst), and
  // how often it is read without events (a heartbeat going stale changes a node's state
  // with no event).
  static constexpr std::chrono::milliseconds kDebounce{100};
  static constexpr std::chrono::seconds kRefresh{5};

  FleetFeed(EtcdConfig etcd, FleetKeys keys, std::vector<trust::OperatorPublicKey> trusted);
  ~FleetFeed();  // stop()
  FleetFeed(const FleetFeed&) = delete;
  FleetFeed& operator=(const FleetFeed&) = delete;

  // Reads the range once (throws what the etcd client throws: an unreachable etcd at
  // start is the caller's error), then starts the watch and the refresher.
  void start();
  // Ends both threads (the watch within about a second) and wakes every reader.
  void stop();
  bool stopped() const { return stop_; }

  Snapshot latest() const;
  // Waits until a snapshot newer than `seq` is there, stop(), or `timeout`; returns the
  // latest then (its seq equal to `seq` when nothing changed).
  Snapshot waitNewer(uint64_t seq, std::chrono::milliseconds timeout) const;

 private:
  void refresh();  // one range read, judged and published when it differs
  void publish(std::shared_ptr<const std::string> json, const std::string& etcdError);
  void watchLoop();
  void refreshLoop();
  void markDirty();
  // Runs a thread's loop; what it throws is published as the feed's error.
  void guarded(const std::function<void()>& loop);

  EtcdConfig config_;
  FleetKeys keys_;
  std::vector<trust::OperatorPublicKey> trusted_;
  VerifiedMemo verified_;  // what refresh() already verified: each refresh checks only news
  std::unique_ptr<EtcdClient> client_;  // unary reads (refresh)
  std::atomic<bool> stop_{false};

  mutable std::mutex mutex_;                 // guards snapshot_, dirty_, readRevision_
  mutable std::condition_variable changed_;  // readers: snapshot_ changed, or stop
  std::condition_variable wake_;             // the refresher: dirty_, or stop
  Snapshot snapshot_;
  bool dirty_ = false;
  int64_t readRevision_ = 0;  // the revision of the newest range read

  std::thread watcher_, refresher_;
};

}  // namespace mesh::fleet
