// FleetLink's heartbeat thread: the node's lease kept alive when the event loop asks
// (beat()), the signed heartbeat and status written only when there is news, and, while
// nothing else is asked of etcd, the liveness probe of the member in use.
#include "agent/fleet_link.hh"

#include <unistd.h>

#include <utility>

#include "fleet/node_signed.hh"
#include "util/clock.hh"

namespace mesh::agent {

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// While nothing else is asked of etcd, the member in use is probed this often: a member
// that hangs (answers nothing; its sockets still accept) is left within this plus
// fleet::kAnswerBudget, and the quiet watch on it follows (about 3 s, not the 5 s
// keep-alive period plus the budget). One small request a second, answered by the member.
constexpr auto kProbeEvery = 1s;

}  // namespace

void FleetLink::heartbeatLoop() {
  fleet::EtcdClient etcd(etcdConfig(), kRequestTimeout);
  const std::string statusKey = keys_.status(o_.node), seenKey = keys_.seen(o_.node);
  const std::string heartbeatKey = fleet::heartbeatKey(keys_, o_.node);
  int64_t lease = 0;
  int64_t heartbeatOn = 0;  // the lease the heartbeat was put on
  // The status last put on `lease`: an idle node writes nothing (sameMaterially).
  std::optional<fleet::NodeStatus> written;
  bool failing = false;  // etcd is unreachable: wait for retryAt, not for news
  auto retryAt = Clock::now();
  auto backoff = o_.backoffMin;
  bool down = false;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // Renewals come when the event loop asks (beat()): a loop that hangs stops them, and
    // the node reads as down once its lease expires.
    if (failing) {
      changed_.wait_until(lock, retryAt, [&] { return stopping_; });
    } else if (!changed_.wait_for(lock, kProbeEvery,
                                  [&] { return stopping_ || statusDirty_ || beatWanted_; })) {
      // Quiet: is the member in use still answering? A failed probe has moved this
      // configuration's clients to the next member (the watch follows); one that no member
      // answers makes the next round a keep-alive, after backoff.
      lock.unlock();
      try {
        etcd.probe();
      } catch (const std::exception& e) {
        if (!down)
          log_.log(Level::Warning, std::string("") + e.what() + "; retrying with backoff",
                   {{"endpoint", etcd.member()}});
        down = true;
        failing = true;
        retryAt = Clock::now() + backoff;
        backoff = std::min(backoff * 2, o_.backoffMax);
      }
      lock.lock();
      continue;
    }
    if (stopping_) break;
    if (failing && Clock::now() < retryAt) continue;
    fleet::NodeStatus status = status_;
    status.refused = refusal_;
    const uint64_t version = statusVersion_;
    // After etcd changed identity the old lease means nothing there: take a new one.
    if (std::exchange(republish_, false)) lease = 0;
    // Removed by someone else: put both again (on the lease, which a keep-alive finds gone
    // when it expired meanwhile: then on a new one).
    if (std::exchange(rewrite_, false)) {
      written.reset();
      heartbeatOn = 0;
    }
    const bool beating = beatWanted_ || lease == 0;
    beatWanted_ = false;
    lock.unlock();
    bool put = false;
    bool called = false;  // a call to etcd succeeded in this round
    try {
      // Liveness is the lease: a keep-alive renews it without a write (etcd's revision
      // stays); only a new lease is written to — its heartbeat, status and seen copy.
      // After a failure the round is a keep-alive again, whatever asked for it: "answers
      // again" is said only after a call to etcd really succeeded.
      const bool renew = beating || down;
      const bool expired = lease != 0 && renew && etcd.keepAliveOnce(lease) == 0;
      called = lease != 0 && renew;
      if (lease == 0 || expired) {
        if (lease != 0) log_.info("the node's lease in etcd had expired; publishing on a new one");
        written.reset();
        lease = etcd.grantLease(ttl_.count());
        called = true;
      }
      if (heartbeatOn != lease) {
        const fleet::Heartbeat h{o_.node, o_.cluster, ::getpid(), unixNowMs(), lease};
        etcd.put(heartbeatKey, fleet::signNodeJson(fleet::encodeHeartbeat(h), nodeKey_), lease);
        heartbeatOn = lease;
      }
      status.lease = lease;
      status.etcdClusterId = etcd.identity().clusterId;
      if (!written || !fleet::sameMaterially(*written, status)) {
        status.publishedAtMs = unixNowMs();
        const std::string text = fleet::signNodeJson(fleet::encodeStatus(status), nodeKey_);
        // One transaction: one request and one etcd revision for both (and the seen copy
        // an agent from before put under the node's prefix, gone).
        etcd.txn({}, {fleet::EtcdOp::put(statusKey, text, lease), fleet::EtcdOp::put(seenKey, text),
                      fleet::EtcdOp::del(keys_.legacySeen(o_.node))});
        written = status;
        put = true;
      }
      if (down && called)
        log_.info("etcd at " + etcd.member() + " answers again; status published",
                  {{"member", etcd.member()}});
      down = false;
      failing = false;
      backoff = o_.backoffMin;
      lock.lock();
      if (statusVersion_ == version) statusDirty_ = false;
      lock.unlock();
      if (put) noteLinked(false, true, "");
      lock.lock();
      continue;
    } catch (const std::exception& e) {  // etcd, or a status that cannot be encoded
      if (!down)
        log_.log(Level::Warning,
                 std::string("cannot publish the node's status: ") + e.what() +
                     "; retrying with backoff",
                 {{"endpoint", etcd.member()}});
      noteLinked(false, false, e.what());
      down = true;
      failing = true;
      retryAt = Clock::now() + backoff;
      backoff = std::min(backoff * 2, o_.backoffMax);
    }
    lock.lock();
  }
  lock.unlock();
  // Stopping on purpose: the node reads as down at once, not a TTL later.
  if (lease != 0) {
    try {
      etcd.revoke(lease);
    } catch (const Error&) {
    }
  }
}

}  // namespace mesh::agent
