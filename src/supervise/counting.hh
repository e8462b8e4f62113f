// A Supervisor that counts the calls that change something, so every cycle can
// report them (a no-op cycle must show zero starts, restarts and reloads).
#pragma once

#include <memory>

#include "supervise/decorator.hh"

namespace mesh::supervise {

struct CallCounts {
  int64_t observe = 0, install = 0, uninstall = 0, start = 0, restart = 0, stop = 0, reload = 0;
  int64_t reloadService = 0;  // services reloaded in place (reload: the manager's daemon-reloads)
};

class CountingSupervisor : public SupervisorDecorator {
 public:
  using SupervisorDecorator::SupervisorDecorator;

  CallCounts counts() const {
    CallCounts c = counts_;
    c.reload = reloadCount();
    return c;
  }

  std::map<std::string, ServiceState> observe(const std::vector<std::string>& names,
                                              bool detailed) override {
    ++counts_.observe;
    return SupervisorDecorator::observe(names, detailed);
  }
  void install(const Unit& unit) override {
    ++counts_.install;
    SupervisorDecorator::install(unit);
  }
  void uninstall(const std::string& name) override {
    ++counts_.uninstall;
    SupervisorDecorator::uninstall(name);
  }
  void start(const std::string& name) override {
    ++counts_.start;
    SupervisorDecorator::start(name);
  }
  void restart(const std::string& name) override {
    ++counts_.restart;
    SupervisorDecorator::restart(name);
  }
  void stop(const std::string& name) override {
    ++counts_.stop;
    SupervisorDecorator::stop(name);
  }
  void reloadService(const std::string& name) override {
    ++counts_.reloadService;
    SupervisorDecorator::reloadService(name);
  }

 private:
  CallCounts counts_;
};

}  // namespace mesh::supervise
