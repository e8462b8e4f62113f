// An orderly stop is not a crash (issue 26): the agent asked to stop (SIGTERM) in
// the middle of a cycle ends it after the resource in hand and leaves its row
// unfinished; `status` says it was stopped, by what and when — not that mesh-host
// was killed or crashed — and still exits 1 (the cycle owes the rest); a SIGKILL
// in a cycle is still a kill; the next cycle that finishes clears the note. The
// cycle is held in the middle deterministically: on a credential read from a FIFO,
// whose read blocks until the test lets it through.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "../support/fifo_feeder.hh"
#include "agent_process.hh"
#include "harness.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using Feeder = test::FifoFeeder;

class AgentStop : public Node {
 protected:
  void SetUp() override {
    Node::SetUp();
    fifo = work + "/slow-secret";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    decl = declare(
        fmt::format("[module.app.file.config]\npath = \"/etc/app.conf\"\ncontent = \"two\"\n\n"
                    "[module.app.credential.key]\npath = \"/etc/app.key\"\nfrom = \"{}\"\n\n"
                    "[module.app.file.zz]\npath = \"/etc/app.zz\"\ncontent = \"last\"\n",
                    fifo));
  }

  std::unique_ptr<AgentProcess> start() {
    return std::make_unique<AgentProcess>(agentArgv(decl, "1h"),
                                          std::map<std::string, std::string>{});
  }

  // Starts an agent and holds its first cycle in the credential's read; then sends
  // `sig` and lets the read through. Returns the agent, exited.
  std::unique_ptr<AgentProcess> holdAndSignal(int sig) {
    auto agent = start();
    Feeder feeder(fifo);
    EXPECT_TRUE(feeder.awaitHeld()) << "the cycle never reached the credential; log:\n"
                                    << agent->log();
    agent->signal(sig);
    if (sig == SIGTERM) {
      // The stop flag is set before this line is logged.
      EXPECT_TRUE(agent->waitFor(
          [](const Json& j) { return j.value("msg", "").starts_with("stopping on SIGTERM"); }, 10s))
          << agent->log();
    }
    feeder.release();
    EXPECT_EQ(agent->waitExit(20s), sig == SIGTERM ? 0 : 128 + sig) << agent->log();
    return agent;
  }

  // The stop note's page holds a note (its first byte is not NUL).
  bool stopNoted() {
    const std::string page = slurp(stateDir() + "/cycle-stopped.page");
    return !page.empty() && page[0] != '\0';
  }

  std::string fifo, decl;
};

TEST_F(AgentStop, ASigtermInACycleIsShownAsAStopNotAsACrash) {
  auto agent = holdAndSignal(SIGTERM);
  bool interrupted = false;
  for (const auto& j : agent->lines())
    interrupted |= AgentProcess::isSummary(j) && j["interrupted"];
  ASSERT_TRUE(interrupted) << "the cycle was not cut short; " << agent->log();
  EXPECT_FALSE(fs::exists(at("/etc/app.zz"))) << "the cycle ran through";

  Result st = mesh({"status"});
  // Failing all the same: the stopped cycle owes what it did not reach.
  EXPECT_EQ(st.code, 1) << st.out << st.err;
  EXPECT_NE(st.out.find("unfinished: cycle 1 (started "), std::string::npos) << st.out;
  EXPECT_NE(st.out.find(") was stopped before it finished: the agent was asked to stop (SIGTERM) "
                        "at 20"),
            std::string::npos)
      << st.out;
  EXPECT_NE(st.out.find("; the next cycle completes what it began"), std::string::npos) << st.out;
  EXPECT_EQ(st.out.find("killed or crashed"), std::string::npos) << st.out;
  EXPECT_EQ(st.out.find("error:"), std::string::npos) << st.out;

  Result js = mesh({"status", "--json"});
  EXPECT_EQ(js.code, 1) << js.out << js.err;
  const auto j = js.json();
  EXPECT_EQ(j["interrupted_cycle"]["cycle"], 1) << j.dump();
  EXPECT_EQ(j["interrupted_cycle"]["stopped"]["signal"], "SIGTERM") << j.dump();
  EXPECT_TRUE(j["interrupted_cycle"]["stopped"]["at"].get<std::string>().starts_with("20"))
      << j.dump();
  EXPECT_TRUE(j["last_error"].is_null()) << j.dump();

  // The next agent's cycle finishes (the FIFO answers at once now): nothing is
  // unfinished, the note is cleared, the node is healthy.
  {
    Feeder feeder(fifo);
    feeder.release();
    auto next = start();
    auto summary = next->nextSummary(20s);
    ASSERT_TRUE(summary) << next->log();
    EXPECT_FALSE((*summary)["interrupted"].get<bool>()) << summary->dump();
    next->signal(SIGTERM);
    ASSERT_EQ(next->waitExit(20s), 0) << next->log();
  }
  EXPECT_EQ(read("/etc/app.zz"), "last");
  EXPECT_FALSE(stopNoted()) << "a finished cycle left the stop note";
  Result after = mesh({"status"});
  EXPECT_EQ(after.code, 0) << after.out << after.err;
  EXPECT_EQ(after.out.find("stopped"), std::string::npos) << after.out;
  EXPECT_TRUE(mesh({"status", "--json"}).json()["interrupted_cycle"].is_null());
}

// A kill is still a kill, even after an orderly stop of an earlier cycle: the note
// names the cycle that was stopped, not the one killed after it.
TEST_F(AgentStop, ASigkillInACycleIsStillShownAsAKill) {
  holdAndSignal(SIGTERM);
  ASSERT_TRUE(stopNoted());
  holdAndSignal(SIGKILL);

  Result st = mesh({"status"});
  EXPECT_EQ(st.code, 1) << st.out << st.err;
  EXPECT_NE(st.out.find("error: cycle 2 (started "), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("never finished: mesh-host was killed or crashed in it"), std::string::npos)
      << st.out;
  EXPECT_EQ(st.out.find("was stopped"), std::string::npos) << st.out;
  Result js = mesh({"status", "--json"});
  EXPECT_EQ(js.code, 1) << js.out;
  const auto j = js.json();
  EXPECT_EQ(j["interrupted_cycle"]["cycle"], 2) << j.dump();
  EXPECT_TRUE(j["interrupted_cycle"].contains("stopped")) << j.dump();
  EXPECT_TRUE(j["interrupted_cycle"]["stopped"].is_null()) << j.dump();
}

}  // namespace
}  // namespace mesh::e2e
