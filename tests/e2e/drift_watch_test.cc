// Drift repaired as it happens: an agent whose interval is 5 minutes repairs a managed
// file that is modified, chmod-ed, deleted or replaced by a link within a second, by an
// inotify event, not at its next interval; its own writes do not wake it; and an outside
// writer that fights back meets repairs that back off instead of spinning.
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "agent_process.hh"
#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class DriftWatch : public Node {
 protected:
  void SetUp() override {
    Node::SetUp();
    decl = declare(
        "[module.m.file.a]\npath = \"/etc/m/a\"\ncontent = \"one\\n\"\nmode = \"0644\"\n\n"
        "[module.m.file.b]\npath = \"/etc/m/b\"\ncontent = \"two\\n\"\n");
    agent =
        std::make_unique<AgentProcess>(agentArgv(decl, "5m"), std::map<std::string, std::string>{});
    ASSERT_TRUE(agent->nextSummary(10s, "start")) << agent->log();
  }
  void TearDown() override {
    if (agent) {
      agent->signal(SIGTERM);
      EXPECT_EQ(agent->waitExit(10s), 0) << agent->log();
    }
    Node::TearDown();
  }

  // Waits for the drift cycle the change caused; how long it took from `changed`.
  std::optional<Json> repaired(Clock::time_point changed, milliseconds* took = nullptr) {
    auto j = agent->waitFor(
        [](const Json& l) {
          return l.contains("trigger") && l.contains("created") &&
                 l["trigger"].get<std::string>().starts_with("drift: m.a");
        },
        5s);
    if (took) *took = std::chrono::duration_cast<milliseconds>(Clock::now() - changed);
    return j;
  }

  std::string decl;
  std::unique_ptr<AgentProcess> agent;
};

TEST_F(DriftWatch, AModifiedFileIsRepairedWithinASecond) {
  const auto t = Clock::now();
  write("/etc/m/a", "changed by hand\n");
  milliseconds took{};
  auto cycle = repaired(t, &took);
  ASSERT_TRUE(cycle) << agent->log();
  EXPECT_EQ((*cycle)["updated"], 1) << cycle->dump();
  EXPECT_EQ(read("/etc/m/a"), "one\n");
  EXPECT_LT(took, 2s) << "repaired by event, not at the 5 min interval";
  RecordProperty("repair_ms", static_cast<int>(took.count()));
  // Its own write cannot be told from someone else's made meanwhile: one check follows,
  // which finds nothing to do, writes nothing, and so wakes nothing: the next cycle is
  // this test's SIGHUP's.
  auto check = agent->nextSummary(5s);
  ASSERT_TRUE(check) << agent->log();
  EXPECT_TRUE((*check)["trigger"].get<std::string>().starts_with("drift: m.a")) << check->dump();
  EXPECT_EQ((*check)["unchanged"], 2) << check->dump();
  agent->signal(SIGHUP);
  auto next = agent->nextSummary(5s);
  ASSERT_TRUE(next) << agent->log();
  EXPECT_EQ((*next)["trigger"], "SIGHUP") << agent->log();
  EXPECT_EQ((*next)["unchanged"], 2) << next->dump();
  // status says what is watched and how many repairs events made.
  Result st = mesh({"status", "--json"});
  const auto watch = st.json()["drift_watch"];
  ASSERT_TRUE(watch.is_object()) << st.out;
  EXPECT_EQ(watch["repairs"], 1) << st.out;
  EXPECT_EQ(watch["watched_dirs"], 1) << "/etc/m holds both files: one watch" << st.out;
  EXPECT_EQ(watch["unwatched"], 0) << st.out;
  Result text = mesh({"status"});
  EXPECT_NE(text.out.find("drift watch: 1 directory watched, 1 repair by event"), std::string::npos)
      << text.out;
}

// An agent killed with SIGKILL cannot remove its note: `status` must not show
// the dead agent's watch as active. It tells by whether anything holds the
// agent's lock (/proc/locks), taking no lock itself; a new agent shows it again.
TEST_F(DriftWatch, AKilledAgentsWatchIsNotShownAsActive) {
  Result st = mesh({"status", "--json"});
  ASSERT_EQ(st.code, 0) << st.out << st.err;
  ASSERT_TRUE(st.json()["drift_watch"].is_object()) << st.out;
  EXPECT_NE(mesh({"status"}).out.find("drift watch: 1 directory watched"), std::string::npos);

  const pid_t pid = agent->pid();
  agent->signal(SIGKILL);
  ASSERT_EQ(agent->waitExit(10s), 128 + SIGKILL) << agent->log();
  agent.reset();
  ASSERT_TRUE(fs::exists(stateDir() + "/drift-watch")) << "the note a killed agent leaves";
  st = mesh({"status", "--json"});
  EXPECT_TRUE(st.json()["drift_watch"].is_null()) << st.out;
  Result text = mesh({"status"});
  EXPECT_EQ(text.out.find("directory watched"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(fmt::format("drift watch: none: the agent that kept it (pid {}) is not "
                                      "running",
                                      pid)),
            std::string::npos)
      << text.out;

  agent =
      std::make_unique<AgentProcess>(agentArgv(decl, "5m"), std::map<std::string, std::string>{});
  ASSERT_TRUE(agent->nextSummary(10s, "start")) << agent->log();
  st = mesh({"status", "--json"});
  EXPECT_TRUE(st.json()["drift_watch"].is_object()) << st.out;
}

TEST_F(DriftWatch, AChmodIsRepaired) {
  const auto t = Clock::now();
  fs::permissions(at("/etc/m/a"), fs::perms(0600));
  ASSERT_TRUE(repaired(t)) << agent->log();
  struct stat st {};
  ASSERT_EQ(::stat(at("/etc/m/a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST_F(DriftWatch, ADeletedFileIsRecreated) {
  const auto t = Clock::now();
  fs::remove(at("/etc/m/a"));
  ASSERT_TRUE(repaired(t)) << agent->log();
  EXPECT_EQ(read("/etc/m/a"), "one\n");
}

TEST_F(DriftWatch, AFileReplacedByALinkIsReplacedBack) {
  const auto t = Clock::now();
  fs::remove(at("/etc/m/a"));
  fs::create_symlink("/etc/passwd", at("/etc/m/a"));
  ASSERT_TRUE(repaired(t)) << agent->log();
  EXPECT_FALSE(fs::is_symlink(at("/etc/m/a")));
  EXPECT_EQ(read("/etc/m/a"), "one\n");
}

// A writer that puts its own content back as soon as the agent repaired it, for four
// seconds: the agent repairs, then backs off (1 s, 2 s, …) instead of repairing again
// and again; once the writer stops, the file is repaired.
TEST_F(DriftWatch, AWriterThatFightsBackMeetsRepairsThatBackOff) {
  std::atomic<bool> stop{false};
  std::atomic<int> writes{0};
  std::thread writer([&] {
    const std::string path = at("/etc/m/a");
    const auto until = Clock::now() + 4s;
    while (!stop && Clock::now() < until) {
      std::string now;
      {
        std::ifstream in(path);
        now.assign(std::istreambuf_iterator<char>(in), {});
      }
      if (now != "mine\n") {
        std::ofstream(path) << "mine\n";
        ++writes;
      }
      std::this_thread::sleep_for(5ms);  // the writer's polling pace, not a synchronisation
    }
  });
  writer.join();
  ASSERT_GE(writes.load(), 4) << "it fought: the agent repaired it that often";
  auto backedOff = agent->waitFor([](const Json& l) { return l.contains("backoff_ms"); }, 3s);
  EXPECT_TRUE(backedOff) << agent->log();
  int driftCycles = 0;
  for (const auto& l : agent->lines())
    if (l.contains("created") && l.value("trigger", "").starts_with("drift: ")) ++driftCycles;
  EXPECT_LE(driftCycles, 12) << "repairs back off, never spin: " << agent->log();
  // The writer has stopped: the last repair comes once the back-off allows (cycle by
  // cycle, as the agent reports them).
  const auto deadline = Clock::now() + 15s;
  while (read("/etc/m/a") != "one\n" && Clock::now() < deadline)
    agent->waitFor([](const Json& l) { return l.contains("created"); }, 1s);
  EXPECT_EQ(read("/etc/m/a"), "one\n") << agent->log();
}

}  // namespace
}  // namespace mesh::e2e
