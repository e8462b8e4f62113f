// The agent's look at its services between cycles (agent/service_watch.hh): a turn
// that fails is logged and tried again, never the end of the watch.
#include "agent/service_watch.hh"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>

#include "util/error.hh"

namespace mesh::agent {
namespace {

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// What the watch hands over (the fleet status) could not be taken once: it is handed
// again on the next turn. Before, the exception ended the watch's thread for good —
// no look at the services and no health check again while the agent lived.
TEST(ServiceWatch, AReportThatFailsIsHandedAgainAndTheWatchGoesOn) {
  const std::string logPath = ::testing::TempDir() + "mesh-service-watch.log";
  const int fd = ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  Logger log(LogFormat::Text, false, fd);
  std::mutex m;
  std::condition_variable handed;
  int calls = 0;
  {
    ServiceWatch watch({.stateDir = ::testing::TempDir(),
                        .root = "/",
                        .supervisor = "builtin",
                        .noteHealth = false,
                        .lookAlways = true},
                       log, [&](const std::vector<fleet::NodeStatus::Service>&) {
                         std::lock_guard<std::mutex> guard(m);
                         ++calls;
                         handed.notify_all();
                         if (calls == 1) throw Error("the fleet refused the status");
                       });
    std::unique_lock<std::mutex> lock(m);
    // A turn every kLookEvery (2 s): the second comes within a few.
    EXPECT_TRUE(handed.wait_for(lock, std::chrono::seconds(30), [&] { return calls >= 2; }))
        << "handed over " << calls << " time(s)";
  }
  ::close(fd);
  const std::string logged = readAll(logPath);
  EXPECT_NE(logged.find("the look at the services failed, tried again in 2 s: the fleet "
                        "refused the status"),
            std::string::npos)
      << logged;
}

}  // namespace
}  // namespace mesh::agent
