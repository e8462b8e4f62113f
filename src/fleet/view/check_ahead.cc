#include "fleet/view/check_ahead.hh"

namespace mesh::fleet {

CheckAhead::CheckAhead(const FleetKeys& keys, const std::vector<trust::OperatorPublicKey>& trusted,
                       VerifiedMemo& memo, std::function<void()> prepare)
    : keys_(keys),
      prefix_(keys.nodesPrefix()),
      trusted_(trusted),
      memo_(memo),
      prepare_(std::move(prepare)),
      thread_([this] { run(); }) {}

void CheckAhead::see(const EtcdKeyValue& kv) {
  // A node's keys are read together (they share its prefix): declaration, enrollment,
  // heartbeat, status.
  std::string_view rest(kv.key);
  if (!rest.starts_with(prefix_)) return;
  rest.remove_prefix(prefix_.size());
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) return;
  const auto node = rest.substr(0, slash), what = rest.substr(slash + 1);
  if (node != node_) {
    node_ = node;
    enrollment_.clear();
  }
  if (what == "enrollment") enrollment_ = kv.value;
  if (what != "status" || enrollment_.empty()) return;
  batch_.push_back({node_, std::move(enrollment_), kv.value});
  enrollment_.clear();
  if (batch_.size() < 16) return;
  {
    std::lock_guard lock(mutex_);
    for (auto& job : batch_) jobs_.push_back(std::move(job));
  }
  batch_.clear();
  wake_.notify_one();
}

void CheckAhead::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void CheckAhead::finish() {
  {
    std::lock_guard lock(mutex_);
    for (auto& job : batch_) jobs_.push_back(std::move(job));
    dropRest_ = false;
  }
  batch_.clear();
  stop();
}

void CheckAhead::run() {
  try {
    if (prepare_) prepare_();
  } catch (...) {
    // The memo stays in memory; what is checked ahead is remembered there all the same.
  }
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_ && (dropRest_ || jobs_.empty())) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    try {
      checkAhead(keys_.cluster, job.node, job.enrollment, job.status, trusted_, memo_);
    } catch (...) {
      // Checking ahead only spares work: the view judges the node again and says why.
    }
  }
}

}  // namespace mesh::fleet
