// One value put to many keys, each only if it is still as it was read, in as few etcd
// transactions as etcd takes and several at once: what `fleet push` does with a signed
// statement (fleet/push.hh). A transaction's compares cover every key it puts, so a
// transaction that fails has written nothing; its keys are then put one by one, each
// conditional on its own, to name the key that changed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fleet/etcd.hh"

namespace mesh::fleet {

struct ConditionalPut {
  std::string key;
  int64_t expectedModRevision = 0;  // 0: the key must not exist
};

struct BatchLimits {
  std::size_t ops = kEtcdMaxTxnOps;  // puts (and compares) per transaction
  std::size_t bytes = 1024 * 1024;   // keys and values per transaction
  std::size_t streams = 8;           // transactions in flight, one connection each
};

// The revision of the put, or 0 when the key had changed (nothing put there).
using PutDone = std::function<void(std::size_t index, int64_t revision)>;

// Puts `value` to every key of `puts`. `done` is called once per put, from one thread
// at a time, as each is decided; `tick` on the calling thread about once a second while
// transactions run (to keep a lease alive). Extra connections use etcd's configuration.
// Throws the first Error a transaction met, once every stream has stopped; the puts
// decided until then have been reported.
void putAllIfUnchanged(EtcdClient& etcd, const std::vector<ConditionalPut>& puts,
                       const std::string& value, const BatchLimits& limits, const PutDone& done,
                       const std::function<void()>& tick);

// Reads the keys of `keys` that exist, at `revision` (one snapshot), in read-only
// transactions of up to kEtcdMaxTxnOps keys, `streams` of them at once on connections
// of their own: a few values scattered among many keys (each node's declaration) without
// reading everything between them. Sorted by key.
std::vector<EtcdKeyValue> readKeysAt(EtcdClient& etcd, const std::vector<std::string>& keys,
                                     int64_t revision, std::size_t streams);

}  // namespace mesh::fleet
