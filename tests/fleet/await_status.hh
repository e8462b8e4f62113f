// Waiting on a node's status in etcd: one range read, then a watch from just after it,
// until the status (nullopt when the key is gone) is what the test awaits. The tests of
// real nodes (nodes_test, cluster_nodes_test) wait on this, never on a timer.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fleet/etcd.hh"
#include "fleet/protocol.hh"

namespace mesh::fleet::test {

// Whether `ok` held for the status under `key` before `timeout` passed. On a cluster, a
// member that fails the test's own client moves it (EtcdMemberFailed): the key is read
// again on the next member, and watched from there.
inline bool awaitStatusKey(EtcdClient& client, const std::string& key,
                           const std::function<bool(const std::optional<NodeStatus>&)>& ok,
                           std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  bool done = false;
  int64_t from = 0;
  // Read at least once, however short the time left.
  for (bool first = true; !done && (first || Clock::now() < deadline); first = false) {
    try {
      if (from == 0) {
        auto range = client.getPrefix(key);
        std::optional<NodeStatus> now;
        for (const auto& kv : range.kvs)
          if (kv.key == key) now = decodeStatus(kv.value, key);
        if (ok(now)) return true;
        from = range.revision + 1;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      client.watch(
          key, from,
          [&](const std::vector<EtcdEvent>& events) {
            for (const auto& e : events) {
              from = e.kv.modRevision + 1;
              std::optional<NodeStatus> s;
              if (e.type == EtcdEvent::Type::Put) s = decodeStatus(e.kv.value, key);
              if (ok(s)) done = true;
            }
            return !done;
          },
          std::max(left, std::chrono::milliseconds(1)));
    } catch (const EtcdMemberFailed&) {
      from = 0;  // the client moved: read again there
    }
  }
  return done;
}

}  // namespace mesh::fleet::test
