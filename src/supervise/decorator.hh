// A Supervisor that hands every call to another: the base of the decorators
// (counting.hh, fault.hh), which override only the calls they look at.
#pragma once

#include <memory>

#include "supervise/supervisor.hh"

namespace mesh::supervise {

class SupervisorDecorator : public Supervisor {
 public:
  explicit SupervisorDecorator(std::unique_ptr<Supervisor> inner) : inner_(std::move(inner)) {}

  std::string name() const override { return inner_->name(); }
  std::map<std::string, ServiceState> observe(const std::vector<std::string>& names,
                                              bool detailed) override {
    return inner_->observe(names, detailed);
  }
  void install(const Unit& unit) override { inner_->install(unit); }
  void uninstall(const std::string& name) override { inner_->uninstall(name); }
  void start(const std::string& name) override { inner_->start(name); }
  void restart(const std::string& name) override { inner_->restart(name); }
  void stop(const std::string& name) override { inner_->stop(name); }
  void reloadService(const std::string& name) override { inner_->reloadService(name); }
  std::map<std::string, std::string> settle(const std::vector<std::string>& names) override {
    return inner_->settle(names);
  }
  void flush() override { inner_->flush(); }
  int64_t reloadCount() const override { return inner_->reloadCount(); }
  std::vector<std::string> unsupportedKeys(const Unit& unit) const override {
    return inner_->unsupportedKeys(unit);
  }
  bool drivesForeignUnits() const override { return inner_->drivesForeignUnits(); }
  ForeignUnit observeForeign(const std::string& name) override {
    return inner_->observeForeign(name);
  }
  void setDropin(const std::string& name, const std::optional<std::string>& text) override {
    inner_->setDropin(name, text);
  }
  void setEnabled(const std::string& name, const ForeignUnit& unit, bool enabled) override {
    inner_->setEnabled(name, unit, enabled);
  }

 private:
  std::unique_ptr<Supervisor> inner_;
};

}  // namespace mesh::supervise
