// The node report (fleet/report.hh) of a cycle, and its publisher: a thread of its own that
// puts the newest report, signed by the node key, at /mesh/<cluster>/reports/<node> — so
// that neither the cycle nor the event loop waits on etcd for it. A report that says
// nothing new (fleet::saysNothingNew) is not put: an idle node, or one failing the same
// way every cycle, writes nothing.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent/log.hh"
#include "apply/cycle.hh"
#include "fleet/etcd.hh"
#include "fleet/report.hh"
#include "trust/node_key.hh"

namespace mesh::agent {

// What a finished cycle reports; nullopt for one that neither changed nor failed
// anything (idle), or was interrupted.
std::optional<fleet::NodeReport> nodeReportOf(const apply::CycleReport& report,
                                              std::optional<int64_t> serial,
                                              const std::string& declarationDigest);

class ReportPublisher {
 public:
  ReportPublisher(fleet::EtcdConfig etcd, fleet::FleetKeys keys, std::string node,
                  const trust::NodeKey& key, Logger& log);
  ~ReportPublisher();  // ends the thread (a put in flight finishes or times out first)
  ReportPublisher(const ReportPublisher&) = delete;
  ReportPublisher& operator=(const ReportPublisher&) = delete;

  // Hands the report over (node and cluster filled in); returns at once. A newer one
  // replaces one not put yet.
  void publish(fleet::NodeReport report);

 private:
  void loop();
  void put(fleet::NodeReport report);

  fleet::FleetKeys keys_;
  std::string node_;
  const trust::NodeKey& key_;
  Logger& log_;
  std::unique_ptr<fleet::EtcdClient> etcd_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<fleet::NodeReport> next_;
  bool stop_ = false;
  // The report put last (read back from etcd before the first put: the history goes on
  // across restarts of the agent); `readBack_` once that was tried.
  std::optional<fleet::NodeReport> last_;
  bool readBack_ = false;
  std::thread thread_;
};

}  // namespace mesh::agent
