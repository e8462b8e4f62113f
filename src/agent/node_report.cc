#include "agent/node_report.hh"

#include "fleet/node_signed.hh"
#include "util/clock.hh"

namespace mesh::agent {

std::optional<fleet::NodeReport> nodeReportOf(const apply::CycleReport& report,
                                              std::optional<int64_t> serial,
                                              const std::string& declarationDigest) {
  if (report.interrupted || (!report.anyChange() && !report.anyFailed())) return std::nullopt;
  fleet::NodeReport r;
  r.cycle = report.cycle;
  r.atMs = unixNowMs();
  r.serial = serial;
  r.declarationDigest = declarationDigest;
  const auto& t = report.tally;
  r.created = t.created;
  r.updated = t.updated;
  r.unchanged = t.unchanged;
  r.removed = t.removed;
  r.released = t.released;
  r.skipped = t.skipped;
  r.failed = t.failed;
  for (const auto& res : report.results) {
    const auto& o = res.outcome;
    if (o.verdict() == apply::Verdict::Unchanged) continue;
    // A credential's outcome never carries a diff, whatever the cycle made of it.
    r.outcomes.push_back({res.id, res.kind, apply::verdictName(o.verdict()), o.reason(), o.detail(),
                          o.restarted, res.kind == "credential" ? "" : o.diff, false});
  }
  if (!report.accessError.empty())
    r.outcomes.push_back({"", "", "failed", report.accessError, "", false, "", false});
  return r;
}

ReportPublisher::ReportPublisher(fleet::EtcdConfig etcd, fleet::FleetKeys keys, std::string node,
                                 const trust::NodeKey& key, Logger& log)
    : keys_(std::move(keys)),
      node_(std::move(node)),
      key_(key),
      log_(log),
      etcd_(std::make_unique<fleet::EtcdClient>(std::move(etcd), std::chrono::seconds(5))),
      thread_([this] { loop(); }) {}

ReportPublisher::~ReportPublisher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ReportPublisher::publish(fleet::NodeReport report) {
  report.node = node_;
  report.cluster = keys_.cluster;
  {
    std::lock_guard lock(mutex_);
    next_ = std::move(report);
  }
  wake_.notify_all();
}

void ReportPublisher::loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    wake_.wait(lock, [&] { return stop_ || next_; });
    if (stop_) break;
    auto report = std::move(*next_);
    next_.reset();
    lock.unlock();
    try {
      put(std::move(report));
    } catch (const std::exception& e) {
      // The next report tries again; the status says how the node stands meanwhile.
      log_.log(Level::Warning, std::string("cannot put the node report: ") + e.what());
    }
    lock.lock();
  }
}

void ReportPublisher::put(fleet::NodeReport report) {
  const std::string key = fleet::reportKey(keys_, node_);
  if (!readBack_) {
    try {
      if (const auto v = etcd_->get(key)) last_ = fleet::decodeReport(v->value, key);
    } catch (const InputError&) {
      // Not a report: the history starts again.
    }
    readBack_ = true;  // an etcd that cannot be read throws past it: tried again next time
  }
  if (last_ && fleet::saysNothingNew(*last_, report)) return;
  fleet::carryHistory(report, last_);
  etcd_->put(key, fleet::signNodeJson(fleet::encodeReport(report), key_));
  last_ = std::move(report);
}

}  // namespace mesh::agent
