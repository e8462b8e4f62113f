#include "util/faults.hh"

#include <gtest/gtest.h>

#include <cstdlib>

namespace mesh {
namespace {

// MESH_HOST_FAULT is read once per process; ctest runs each test in its own.
TEST(Faults, ASeamIsOnOnlyWhenNamed) {
  ::setenv("MESH_HOST_FAULT", fault::kRenderUnitV2, 1);
  EXPECT_TRUE(faultSet(fault::kRenderUnitV2));
  EXPECT_FALSE(faultSet(fault::kRecreateEveryOtherCycle));
  ::unsetenv("MESH_HOST_FAULT");
  EXPECT_TRUE(faultSet(fault::kRenderUnitV2));  // read once: a run keeps its seam
}

}  // namespace
}  // namespace mesh
