// TEST-ONLY SEAM fault::kRecreateEveryOtherCycle (util/faults.hh), as a
// Supervisor decorator like CountingSupervisor (counting.hh, decorator.hh), so
// that no applier holds test code. Inert unless MESH_HOST_FAULT names the seam.
#pragma once

#include <memory>

#include "supervise/decorator.hh"
#include "util/faults.hh"

namespace mesh::supervise {

// On even-numbered cycles (`cycle`, read at each call: the owner's counter),
// shows every installed unit as edited by hand, so the process applier replaces
// and restarts every process every other cycle: the churn `status` must flag.
class RecreateEveryOtherCycle : public SupervisorDecorator {
 public:
  RecreateEveryOtherCycle(std::unique_ptr<Supervisor> inner, const int64_t& cycle)
      : SupervisorDecorator(std::move(inner)), cycle_(cycle) {}

  std::map<std::string, ServiceState> observe(const std::vector<std::string>& names,
                                              bool detailed) override {
    auto states = SupervisorDecorator::observe(names, detailed);
    if (cycle_ > 0 && cycle_ % 2 == 0)
      for (auto& [name, st] : states)
        if (st.installed) {
          st.installedText += "# edited (fault injected)\n";
          st.unitEdit = "fault injected";
        }
    return states;
  }

 private:
  const int64_t& cycle_;
};

// `inner`, decorated with the seam MESH_HOST_FAULT turns on, if any.
inline std::unique_ptr<Supervisor> withFaults(std::unique_ptr<Supervisor> inner,
                                              const int64_t& cycle) {
  if (faultSet(fault::kRecreateEveryOtherCycle))
    return std::make_unique<RecreateEveryOtherCycle>(std::move(inner), cycle);
  return inner;
}

}  // namespace mesh::supervise
