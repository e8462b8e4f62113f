// Rolling-restart slots: a counting semaphore on etcd leases, so that with a limit of K
// at most K nodes of the fleet restart the same service at once after a push.
//
//   /mesh/<cluster>/restarts/<service>/<i>   i in 0 .. limit-1; value "<holder> pid <pid>"
//
// A node takes slot i by creating its key with put-if-absent on a lease of its own and
// keeps that lease alive from a background thread for as long as it holds the Slot: the
// restart and the wait until the service is back (active, or failed). Releasing revokes
// the lease, which deletes the key at once.
//
// The bound (kRestartSlotBound, the lease's TTL): a slot counts as taken for at most
// that long. A holder that dies mid-restart stops renewing, and its slot stays taken until
// the lease expires — the service it was restarting may still be coming up, and freeing
// the slot early would let one more node restart than allowed. When that node's agent
// comes back it takes the slot over for the restart it still owes, and frees any other
// slot it held once its first cycle ends (releaseStale: the service is back by then).
// What a node that waits ignores, so that a writer to etcd can delay a rollout but not
// stall it past the bound: a slot key without a lease (it would never go), and a slot
// this node has seen held by the same holder for longer than the bound (a lease renewed
// forever). Such a slot is taken over with a put conditional on its mod revision.
//
// A node that finds every slot taken watches the prefix and tries again on the next
// change. Keys at or above the current limit (left by a push with a higher one) are not
// considered: while they last, more than `limit` nodes may restart. A waiting node holds
// no lease; one is granted only to try a slot seen free and revoked when every try loses
// the race.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fleet/etcd.hh"
#include "fleet/protocol.hh"

namespace mesh::fleet {

// How long a slot counts as taken at most (the slot lease's TTL), as systemd's default
// TimeoutStartSec: a restart that takes longer has failed by systemd's own rule.
inline constexpr std::chrono::seconds kRestartSlotBound{90};

class RestartSlots {
 public:
  // `holder`: this node's name, written with the pid as the slot's value for operators.
  // `etcd` must outlive this object and every Slot it hands out. Throws InputError for a
  // lease TTL below 1 s.
  // `leaseTtl` is the bound (kRestartSlotBound; tests shorten it).
  RestartSlots(EtcdClient& etcd, FleetKeys keys, std::string holder,
               std::chrono::seconds leaseTtl = kRestartSlotBound);

  // A held slot. Releasing it (release() or the destructor) stops the keepalive thread
  // and revokes the lease, which deletes the key.
  class [[nodiscard]] Slot {
   public:
    Slot(Slot&& other) noexcept;
    Slot& operator=(Slot&& other) noexcept;  // releases the slot held before, quietly
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot();  // releases; errors are ignored (the lease then expires within its TTL)

    const std::string& key() const;  // "" once moved from
    std::int64_t lease() const;      // 0 once moved from
    bool held() const;               // not yet released nor moved from
    // The lease has expired (etcd said so, or no renewal succeeded within its TTL): the
    // slot may since have gone to another node. Stays true.
    bool lost() const;

    // Stops renewing and revokes the lease; a second call does nothing. Throws Error when
    // etcd cannot be reached; the slot is then released all the same and frees itself
    // when its lease expires.
    void release();

   private:
    friend class RestartSlots;
    struct State;
    explicit Slot(std::unique_ptr<State> state);
    void releaseQuietly() noexcept;
    std::unique_ptr<State> state_;
  };

  // Takes one of `limit` (>= 1) slots for `service`, waiting while all are taken. Throws
  // Error "no restart slot for <service> within <timeout>: <why>" when `timeout` passes
  // (while etcd is unreachable too: it retries with backoff until then) or soon after
  // *stop becomes true; InputError for a bad service name or limit. May overrun `timeout`
  // by up to one etcd request timeout when etcd stops answering mid-request.
  Slot acquire(const std::string& service, std::int64_t limit, std::chrono::milliseconds timeout,
               const std::atomic<bool>* stop = nullptr);

  // Deletes every slot key of every service that names this holder with another pid (an
  // earlier agent of this node that died holding it), unless it changed meanwhile;
  // returns the keys deleted. For after a cycle: the services it restarted are back.
  std::vector<std::string> releaseStale();

 private:
  // Whether a taken slot may be ignored (no lease, held too long, held by this node
  // under another pid); notes when each holder was first seen.
  bool ignorable(const EtcdKeyValue& kv);
  // When the first of these holders passes the bound (as this node saw them).
  std::chrono::steady_clock::time_point nextExpiry(
      const std::map<std::int64_t, EtcdKeyValue>& taken);

  EtcdClient& etcd_;
  FleetKeys keys_;
  std::string holder_;
  std::string value_;  // "<holder> pid <pid>"
  std::chrono::seconds leaseTtl_;
  // key -> (its create revision, when this node first saw it so): "held too long".
  // Unguarded: one acquire at a time per RestartSlots (a node's cycle).
  std::map<std::string, std::pair<std::int64_t, std::chrono::steady_clock::time_point>> seen_;
};

}  // namespace mesh::fleet
