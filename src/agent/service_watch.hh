// The agent's look at its services between cycles (docs/fleet.md, "services"): every
// kLookEvery one observe() of the declared services (no cycle, no store write), and each
// declared health check when it is due (agent/health_probe.hh), on a thread of its own.
// What it sees goes to `onChange` only when it changed — a new run (a crash restart: a new
// start time and one more restart by crash), running or not, a count, a health — so an
// idle node with steady services writes nothing. The checks' results go to the health
// note (apply/health_note.hh) for `mesh-host status`, again only when they change.
//
// A check never restarts anything: restarting is the supervisor's (Restart=), and a
// rollout's (`fleet push --canary`) to judge.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/log.hh"
#include "agent/service_look.hh"
#include "apply/health_note.hh"

namespace mesh::agent {

inline constexpr std::chrono::seconds kLookEvery{2};

struct ServiceWatchOptions {
  std::string stateDir, root, supervisor = "auto", unitDir = "/etc/systemd/system";
  // Whether to write the health note (the agent: yes).
  bool noteHealth = true;
  // Look every kLookEvery even when no service declares a check: fleet mode, whose status
  // carries the services. Otherwise only checked services are looked at between cycles.
  bool lookAlways = true;
};

class ServiceWatch {
 public:
  using OnChange = std::function<void(const std::vector<fleet::NodeStatus::Service>&)>;
  ServiceWatch(ServiceWatchOptions o, Logger& log, OnChange onChange);
  ~ServiceWatch();  // stops the thread, removes the health note
  ServiceWatch(const ServiceWatch&) = delete;
  ServiceWatch& operator=(const ServiceWatch&) = delete;

  // Before a cycle (the event loop's thread): the services of the declaration it runs.
  void expect(const decl::Declaration& d);
  // After the cycle (on its thread, with its store): those services, with their restart
  // counts, are the ones watched; looks at once and hands what it saw to onChange
  // before returning.
  void refresh(state::Store& store);

 private:
  void loop();
  // One turn of the loop: the look and the checks due, then the report; under mutex_
  // (`lock`), let go of while a check runs.
  void turn(std::unique_lock<std::mutex>& lock, WatchClock::time_point& nextLook);
  // Observes every watched service; under mutex_.
  void lookLocked(WatchClock::time_point now);
  // Hands the services to onChange (and the note) when they changed; under mutex_.
  void reportLocked();

  ServiceWatchOptions o_;
  Logger& log_;
  OnChange onChange_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::unique_ptr<supervise::Supervisor> supervisor_;
  std::string supervisorError_;  // logged once
  std::string turnError_;        // the same: a turn that failed, the watch goes on
  std::vector<WatchedService> services_;
  std::vector<WatchedService> expected_;  // the next cycle's
  std::map<std::string, HealthTrack> tracks_;
  std::map<std::string, supervise::ServiceState> states_;
  std::vector<fleet::NodeStatus::Service> reported_;
  bool reportedOnce_ = false;
  std::map<std::string, apply::HealthSeen> noted_;   // written in the note
  std::map<std::string, apply::HealthSeen> logged_;  // logged (the note may have failed)
  std::thread thread_;
};

}  // namespace mesh::agent
