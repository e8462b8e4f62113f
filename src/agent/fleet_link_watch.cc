// FleetLink's watcher thread: reads the node's declaration key, then watches the node's
// prefix from the next revision; moves with its member when that one fails, backs off
// when none answers, reads again after a compaction or a changed etcd, and publishes the
// status again when someone removed it.
#include "agent/fleet_link.hh"

#include <algorithm>
#include <string>

#include "fleet/node_signed.hh"

namespace mesh::agent {

namespace {

using namespace std::chrono_literals;

// A watch is re-established this often even when nothing happens, so that a
// silently dropped connection is noticed.
constexpr auto kWatchRenew = 5min;

}  // namespace

void FleetLink::etcdChanged(const std::string& why) {
  log_.log(Level::Warning,
           "" + why +
               "; reading the declaration again and publishing the status again (the "
               "declaration in force stays until a newer signed one arrives)",
           {{"endpoint", o_.endpoint}});
  std::lock_guard<std::mutex> guard(mutex_);
  lastJudged_.clear();
  republish_ = true;
  statusDirty_ = true;
  ++statusVersion_;
  changed_.notify_all();
}

void FleetLink::publishAgain() {
  log_.log(Level::Warning,
           "the node's status or heartbeat was removed from etcd (fleet forget?); publishing "
           "them again",
           {{"endpoint", o_.endpoint}});
  std::lock_guard<std::mutex> guard(mutex_);
  rewrite_ = true;
  statusDirty_ = true;
  ++statusVersion_;
  changed_.notify_all();
}

void FleetLink::watchLoop(int64_t resumeAfter) {
  fleet::EtcdClient etcd(etcdConfig(), kRequestTimeout);
  etcd.guardIdentity();  // a wiped, restored or replaced etcd throws EtcdClusterChanged
  // Always read first: a revision remembered from before (the cached declaration's)
  // means nothing to an etcd that was wiped or replaced meanwhile, and a value already
  // judged is recognised by its content.
  (void)resumeAfter;
  // The watch covers the node's whole prefix: its declaration, and its own status and
  // heartbeat, whose removal by anyone else (`fleet forget --force` of a running node)
  // is answered by publishing them again (publishAgain).
  const std::string prefix = fleet::nodePrefix(keys_, o_.node);
  const std::string statusKey = keys_.status(o_.node);
  const std::string heartbeatKey = fleet::heartbeatKey(keys_, o_.node);
  int64_t from = 0;
  auto backoff = o_.backoffMin;
  bool down = false;
  // Members failed in a row; after as many as there are, an outage.
  std::size_t moves = 0;
  std::string watchedThrough;  // the member the last watch was made on
  const std::size_t etcdMembers = std::count(o_.endpoint.begin(), o_.endpoint.end(), ',') + 1;
  while (!cancel_.load()) {
    try {
      if (from == 0 || down) {
        // One range read gives the value and the revision to watch after, so no
        // put between the read and the watch is missed. After an outage it also
        // proves etcd is back; a value already judged is recognised by its content.
        auto range = etcd.getPrefix(declarationKey_);
        for (const auto& kv : range.kvs)
          if (kv.key == declarationKey_) consider(kv.value, kv.modRevision);
        // Watch from just after the read, also after an outage: the read holds everything
        // up to its revision, and a revision remembered from before the outage may belong
        // to an etcd that was wiped or replaced meanwhile (puts below it would be missed).
        from = range.revision + 1;
      }
      if (down) {
        log_.info("etcd at " + etcd.member() + " answers; watching " + declarationKey_ +
                      " from revision " + std::to_string(from),
                  {{"member", etcd.member()}});
        down = false;
      }
      moves = 0;
      // The watch starts from `from`: nothing put since the read can be missed any more.
      if (!watchedThrough.empty() && watchedThrough != etcd.member())
        log_.info("watching " + declarationKey_ + " through etcd at " + etcd.member() +
                      " from revision " + std::to_string(from),
                  {{"member", etcd.member()}});
      if (watchedThrough.empty())
        log_.info("watching " + declarationKey_ + " through etcd at " + etcd.member(),
                  {{"member", etcd.member()}});
      watchedThrough = etcd.member();
      noteLinked(true, false, "");
      etcd.watch(
          prefix, from,
          [&](const std::vector<fleet::EtcdEvent>& events) {
            backoff = o_.backoffMin;
            bool forgotten = false;
            for (const auto& ev : events) {
              from = std::max(from, ev.kv.modRevision + 1);
              const bool put = ev.type == fleet::EtcdEvent::Type::Put;
              if (ev.kv.key == declarationKey_ && put)
                consider(ev.kv.value, ev.kv.modRevision);
              else if (ev.kv.key == declarationKey_)
                log_.log(Level::Warning,
                         "" + declarationKey_ +
                             " was deleted from etcd; the last accepted declaration stays in "
                             "force",
                         {{"revision", ev.kv.modRevision}});
              else if (!put && (ev.kv.key == statusKey || ev.kv.key == heartbeatKey))
                forgotten = true;
            }
            if (forgotten) publishAgain();
            return !cancel_.load();
          },
          kWatchRenew, fleet::EtcdClient::WatchScope::Prefix, &cancel_);
      backoff = o_.backoffMin;  // it ran its course: the connection was good
    } catch (const fleet::EtcdCompacted& e) {
      log_.info("watch of " + declarationKey_ + " from a compacted revision; reading it again");
      from = 0;
    } catch (const fleet::EtcdClusterChanged& e) {
      etcdChanged(e.what());
      from = 0;
      down = false;
      backoff = o_.backoffMin;
    } catch (const fleet::EtcdMemberFailed& e) {
      // The client has moved to the next member: read there and watch again at once (the
      // read holds every put up to its revision, and a value already judged is known by
      // its content: nothing missed, nothing applied twice). Once round the members
      // without an answer, back off as for any outage.
      const std::string next = etcd.member();
      noteLinked(false, false, e.what());
      down = true;
      if (++moves < etcdMembers && next != e.member()) {
        log_.log(Level::Warning, std::string("") + e.what() + "; moving to " + next,
                 {{"member", e.member()}, {"next", next}});
        continue;
      }
      if (moves == etcdMembers)
        log_.log(Level::Warning,
                 std::string("") + e.what() +
                     "; no member of etcd serves the watch; the last accepted declaration "
                     "stays in force; retrying with backoff",
                 {{"member", e.member()}});
      if (!pause(backoff)) break;
      backoff = std::min(backoff * 2, o_.backoffMax);
    } catch (const std::exception& e) {
      if (!down)
        log_.log(Level::Warning,
                 std::string("") + e.what() +
                     "; the last accepted declaration stays in force; retrying with backoff",
                 {{"endpoint", o_.endpoint}});
      noteLinked(false, false, e.what());
      down = true;
      if (!pause(backoff)) break;
      backoff = std::min(backoff * 2, o_.backoffMax);
    }
  }
}

}  // namespace mesh::agent
