// Rolling-restart slots: a counting semaphore on etcd leases, so that with a limit of K
// at most K nodes of the fleet restart the same service at once after a push.
//
//   /mesh/<cluster>/restarts/<service>/<i>   i in 0 .. limit-1; value "<holder> pid <pid>"
//
// A node takes slot i by creating its key with put-if-absent on a lease of its own and
// keeps that lease alive from a background thread for as long as it holds the Slot.
// Releasing revokes the lease, which deletes the key at once; a node that dies stops
// renewing and its key goes when the lease expires, so a dead holder blocks the others
// for at most the lease's TTL. A node that finds every slot taken watches the prefix and
// tries again on the next change. Keys at or above the current limit (left by a push with
// a higher one) are not considered: while they last, more than `limit` nodes may restart.
// A waiting node holds no lease; one is granted only to try a slot seen free and revoked
// when every try loses the race.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "fleet/etcd.hh"
#include "fleet/protocol.hh"

namespace mesh::fleet {

class RestartSlots {
 public:
  // `holder`: this node's name, written with the pid as the slot's value for operators.
  // `etcd` must outlive this object and every Slot it hands out. Throws InputError for a
  // lease TTL below 1 s.
  RestartSlots(EtcdClient& etcd, FleetKeys keys, std::string holder,
               std::chrono::seconds leaseTtl = std::chrono::seconds(10));

  // A held slot. Releasing it (release() or the destructor) stops the keepalive thread
  // and revokes the lease, which deletes the key.
  class Slot {
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

 private:
  EtcdClient& etcd_;
  FleetKeys keys_;
  std::string value_;  // "<holder> pid <pid>"
  std::chrono::seconds leaseTtl_;
};

}  // namespace mesh::fleet
