// The identity guard: which etcd answers, from the headers of its answers (unary calls,
// the gRPC range, every watch line). Its rules: the cluster ID is the newest header's;
// the revision is the highest any header carried, and never goes back within one etcd;
// once guarded, an answer from another cluster ID or with a lower revision throws
// EtcdClusterChanged, once: the new identity is adopted as it is thrown, so the next
// answer from it passes.
#include <algorithm>

#include "fleet/etcd.hh"

namespace mesh::fleet {

EtcdClient::Identity EtcdClient::identity() const {
  std::lock_guard<std::mutex> lock(identityMutex_);
  return identity_;
}

void EtcdClient::guardIdentity() {
  std::lock_guard<std::mutex> lock(identityMutex_);
  guarded_ = true;
}

void EtcdClient::noteHeader(const std::string& clusterId, std::int64_t revision) {
  std::lock_guard<std::mutex> lock(identityMutex_);
  const Identity was = identity_;
  const bool otherCluster =
      !clusterId.empty() && !was.clusterId.empty() && clusterId != was.clusterId;
  const bool wentBack = revision > 0 && revision < was.revision;
  if (!clusterId.empty()) identity_.clusterId = clusterId;
  if (otherCluster || wentBack)
    identity_.revision = revision;  // adopted: the next answer from it passes
  else
    identity_.revision = std::max(identity_.revision, revision);
  if (!guarded_) return;
  if (otherCluster)
    throw EtcdClusterChanged(
        "etcd at {} is another cluster now (cluster ID {}, was {}): it was replaced or restored "
        "from a backup",
        member(), clusterId, was.clusterId);
  if (wentBack)
    throw EtcdClusterChanged(
        "etcd at {} went back from revision {} to {}: it was wiped or restored from a backup",
        member(), was.revision, revision);
}

}  // namespace mesh::fleet
