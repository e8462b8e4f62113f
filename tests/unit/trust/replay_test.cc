#include "trust/replay.hh"

#include <gtest/gtest.h>

#include <limits>

namespace mesh::trust {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

struct Case {
  const char* what;
  std::optional<int64_t> serial;
  std::string digest;
  ReplayFloor floor;
  Replay expected;
};

TEST(Replay, OneRuleForEveryCaller) {
  const Case cases[] = {
      {"nothing taken yet", 1, "sha256:a", {}, Replay::Newer},
      {"nothing taken yet, no serial", std::nullopt, "sha256:a", {}, Replay::Newer},
      {"higher", 4, "sha256:b", {3, "sha256:a"}, Replay::Newer},
      {"higher, floor content unknown", 4, "sha256:b", {3, ""}, Replay::Newer},
      {"the highest serial there is", kMax, "sha256:b", {kMax - 1, "sha256:a"}, Replay::Newer},
      {"equal, same content", 3, "sha256:a", {3, "sha256:a"}, Replay::Same},
      {"equal, floor content unknown", 3, "sha256:b", {3, ""}, Replay::Same},
      {"equal, other content", 3, "sha256:b", {3, "sha256:a"}, Replay::Conflict},
      {"older", 2, "sha256:a", {3, "sha256:a"}, Replay::Older},
      {"older, floor content unknown", 2, "sha256:a", {3, ""}, Replay::Older},
      {"negative below zero", -1, "sha256:a", {0, ""}, Replay::Older},
      {"no serial after one", std::nullopt, "sha256:a", {3, "sha256:a"}, Replay::Unserialed},
  };
  for (const auto& c : cases)
    EXPECT_EQ(judgeReplay(c.serial, c.digest, c.floor), c.expected) << c.what;
}

}  // namespace
}  // namespace mesh::trust
