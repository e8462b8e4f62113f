// Checking ahead: the signatures of a range checked on a thread of their own while the range
// is still being read, into the memo (fleet/enroll.hh) that the judgement (fleet/view.hh)
// then finds them in. It only spares work: what it did not check, the judgement checks.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fleet/enroll.hh"
#include "fleet/etcd.hh"
#include "fleet/protocol.hh"
#include "trust/operator_key.hh"

namespace mesh::fleet {

// Checks signatures while a range is still being read (EtcdClient::getPrefix's onKv), into
// a memo that viewFleet then finds them in: on one thread of its own, each node's
// enrollment and status (checkAhead, fleet/enroll.hh) as soon as both are in. `prepare`
// runs first on that thread (the memo's loading: nothing touches the memo before it
// ends). stop() drops what is not checked yet (viewFleet checks it) and waits.
class CheckAhead {
 public:
  CheckAhead(const FleetKeys& keys, const std::vector<trust::OperatorPublicKey>& trusted,
             VerifiedMemo& memo, std::function<void()> prepare);
  ~CheckAhead() { stop(); }
  CheckAhead(const CheckAhead&) = delete;
  CheckAhead& operator=(const CheckAhead&) = delete;
  // Each key as read, in key order (a node's enrollment comes before its status).
  void see(const EtcdKeyValue& kv);
  void stop();
  // Checks everything seen so far, then stops (what a test waits for).
  void finish();

 private:
  struct Job {
    std::string node, enrollment, status;
  };
  void run();
  const FleetKeys& keys_;
  const std::string prefix_;
  const std::vector<trust::OperatorPublicKey>& trusted_;
  VerifiedMemo& memo_;
  std::function<void()> prepare_;
  std::string node_, enrollment_;  // the node being read, and its enrollment if seen
  std::vector<Job> batch_;         // handed over a few at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  bool stopping_ = false, dropRest_ = true;
  std::thread thread_;
};

}  // namespace mesh::fleet
