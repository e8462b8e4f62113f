// A Supervisor that counts the calls that change something, so every cycle can
// report them (a no-op cycle must show zero starts, restarts and reloads).
#pragma once

#include <memory>

#include "supervise/supervisor.hh"

namespace mesh::supervise {

struct CallCounts {
  int64_t observe = 0, install = 0, uninstall = 0, start = 0, restart = 0, stop = 0, reload = 0;
  int64_t reloadService = 0;  // services reloaded in place (reload: the manager's daemon-reloads)
};

class CountingSupervisor : public Supervisor {
 public:
  explicit CountingSupervisor(std::unique_ptr<Supervisor> inner) : inner_(std::move(inner)) {}

  CallCounts counts() const {
    CallCounts c = counts_;
    c.reload = inner_->reloadCount();
    return c;
  }

  std::string name() const override { return inner_->name(); }
  std::map<std::string, ServiceState> observe(const std::vector<std::string>& names,
                                              bool detailed) override {
    ++counts_.observe;
    return inner_->observe(names, detailed);
  }
  void install(const Unit& unit) override {
    ++counts_.install;
    inner_->install(unit);
  }
  void uninstall(const std::string& name) override {
    ++counts_.uninstall;
    inner_->uninstall(name);
  }
  void start(const std::string& name) override {
    ++counts_.start;
    inner_->start(name);
  }
  void restart(const std::string& name) override {
    ++counts_.restart;
    inner_->restart(name);
  }
  void stop(const std::string& name) override {
    ++counts_.stop;
    inner_->stop(name);
  }
  void reloadService(const std::string& name) override {
    ++counts_.reloadService;
    inner_->reloadService(name);
  }
  void flush() override { inner_->flush(); }
  int64_t reloadCount() const override { return inner_->reloadCount(); }
  std::vector<std::string> unsupportedKeys(const Unit& unit) const override {
    return inner_->unsupportedKeys(unit);
  }

 private:
  std::unique_ptr<Supervisor> inner_;
  CallCounts counts_;
};

}  // namespace mesh::supervise
