// The cluster's push lock: /mesh/<cluster>/push-lock, a key created only when absent, on
// a lease of its own, so that a push that dies frees it within kLockTtl. `fleet push`
// holds it from its range read to its last write (fleet/push.hh); released (the lease
// revoked) when it goes out of scope.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "fleet/etcd.hh"
#include "fleet/protocol.hh"

namespace mesh::fleet {

class [[nodiscard]] PushLock {
 public:
  static constexpr int64_t kLockTtl = 10;  // seconds

  // Takes the lock, waiting while another push holds it (saying so once through `warn`)
  // up to `timeout`; then throws Error, having taken nothing.
  PushLock(EtcdClient& etcd, const FleetKeys& keys, const std::string& pushedBy,
           std::chrono::milliseconds timeout, const std::function<void(const std::string&)>& warn)
      : PushLock(etcd, keys.pushLock(), "push lock", pushedBy, timeout, warn) {}
  // The same lock at another key: `what` names it in messages ("rollout driver lock").
  PushLock(EtcdClient& etcd, std::string key, std::string what, const std::string& pushedBy,
           std::chrono::milliseconds timeout, const std::function<void(const std::string&)>& warn);
  ~PushLock() { release(); }
  PushLock(const PushLock&) = delete;
  PushLock& operator=(const PushLock&) = delete;

  // Renews the lease once a third of its TTL has passed; throws when it has expired.
  void keepAlive();

 private:
  static std::string holderText(const std::string& value);
  void release() noexcept;

  EtcdClient& etcd_;
  std::string key_;
  std::string what_;
  int64_t lease_ = 0;
  std::chrono::steady_clock::time_point renewed_;
};

}  // namespace mesh::fleet
