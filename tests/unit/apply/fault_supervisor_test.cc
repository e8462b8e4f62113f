// The recreate-every-other-cycle seam as a supervisor decorator
// (supervise/fault.hh): on even-numbered cycles every installed unit shows as
// edited, with the seam's name for the drift reason; otherwise it changes nothing.
#include "supervise/fault.hh"

#include <gtest/gtest.h>

#include <cstdlib>

namespace mesh::supervise {
namespace {

// One installed service "a.service" and one not installed, "b.service".
class OneInstalled : public Supervisor {
 public:
  std::string name() const override { return "one"; }
  std::map<std::string, ServiceState> observe(const std::vector<std::string>& names,
                                              bool) override {
    std::map<std::string, ServiceState> out;
    for (const auto& n : names) {
      ServiceState st;
      if (n == "a.service") {
        st.installed = true;
        st.installedText = "[Service]\n";
      }
      out[n] = st;
    }
    return out;
  }
  void install(const Unit&) override {}
  void uninstall(const std::string&) override {}
  void start(const std::string&) override {}
  void restart(const std::string&) override {}
  void stop(const std::string&) override {}
  void reloadService(const std::string&) override {}
  std::vector<std::string> unsupportedKeys(const Unit&) const override { return {}; }
};

TEST(RecreateEveryOtherCycle, ShowsInstalledUnitsEditedOnEvenCyclesOnly) {
  int64_t cycle = 0;
  RecreateEveryOtherCycle sup(std::make_unique<OneInstalled>(), cycle);
  for (int64_t c : {0, 1, 2, 3, 4}) {
    cycle = c;
    auto states = sup.observe({"a.service", "b.service"}, false);
    const bool edited = c > 0 && c % 2 == 0;
    EXPECT_EQ(states["a.service"].installedText != "[Service]\n", edited) << "cycle " << c;
    EXPECT_EQ(states["a.service"].unitEdit, edited ? "fault injected" : "") << "cycle " << c;
    EXPECT_FALSE(states["b.service"].installed) << "cycle " << c;
    EXPECT_EQ(states["b.service"].unitEdit, "") << "cycle " << c;
  }
}

// MESH_HOST_FAULT is read once per process; ctest runs each test in its own.
TEST(RecreateEveryOtherCycle, WithFaultsDecoratesOnlyWhenTheSeamIsSet) {
  const int64_t cycle = 2;
  ::setenv("MESH_HOST_FAULT", fault::kRecreateEveryOtherCycle, 1);
  auto sup = withFaults(std::make_unique<OneInstalled>(), cycle);
  ::unsetenv("MESH_HOST_FAULT");
  EXPECT_NE(dynamic_cast<RecreateEveryOtherCycle*>(sup.get()), nullptr);
  EXPECT_EQ(sup->observe({"a.service"}, false)["a.service"].unitEdit, "fault injected");
}

TEST(RecreateEveryOtherCycle, WithFaultsLeavesTheSupervisorAsIsWhenUnset) {
  const int64_t cycle = 2;
  ::unsetenv("MESH_HOST_FAULT");
  auto sup = withFaults(std::make_unique<OneInstalled>(), cycle);
  EXPECT_NE(dynamic_cast<OneInstalled*>(sup.get()), nullptr);
  EXPECT_EQ(sup->observe({"a.service"}, false)["a.service"].installedText, "[Service]\n");
}

}  // namespace
}  // namespace mesh::supervise
