// A hostile local user who is no declared path's owner, only what the docs make
// such a user: a member of the state directory's group (a status reader,
// docs/operating.md "Status without root"), or any user at all. Every lock it can
// take, every abstract socket name it can bind, every link it can plant where a
// service of its own reads its environment file: root's agent, applies and
// supervisors must neither wait for it, nor be kept from starting, nor be led to
// read for it what it may not read.
//
// The user is a real one (useradd, removed with userdel); its acts run under its
// uid and gid through setpriv, the held locks and sockets in mesh_lock_squatter
// (lock_squatter.cc). Needs root; skipped otherwise.
#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../support/child.hh"
#include "agent_process.hh"
#include "harness.hh"
#include "local_user.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;

// mesh_lock_squatter as the user: started, read until it says "ready", and
// holding what it took until destroyed.
class Squatter {
 public:
  Squatter(uid_t uid, gid_t gid, const std::vector<std::string>& args) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) std::abort();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      std::vector<std::string> argv = {"setpriv", fmt::format("--reuid={}", uid),
                                       fmt::format("--regid={}", gid), "--clear-groups",
                                       LOCK_SQUATTER_BIN};
      argv.insert(argv.end(), args.begin(), args.end());
      test::execArgv(argv);
    }
    ::close(in[0]);
    ::close(out[1]);
    stdin_ = in[1];
    stdout_ = out[0];
    // Until it says it holds everything (or ends): no sleep, its own word.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (said_.find("ready\n") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      pollfd p{stdout_, POLLIN, 0};
      if (::poll(&p, 1, 1000) != 1) continue;
      char buf[4096];
      ssize_t n = ::read(stdout_, buf, sizeof buf);
      if (n <= 0) break;
      said_.append(buf, static_cast<size_t>(n));
    }
  }
  ~Squatter() {
    ::close(stdin_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    ::close(stdout_);
  }
  bool ready() const { return said_.find("ready\n") != std::string::npos; }
  bool said(const std::string& line) const { return said_.find(line + "\n") != std::string::npos; }
  const std::string& output() const { return said_; }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1, stdout_ = -1;
  std::string said_;
};

class HostileLocal : public Node {
 protected:
  void SetUp() override {
    Node::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "a hostile user needs root to create it and to apply";
    local = std::make_unique<LocalUser>("meshlocal");
    ASSERT_TRUE(local->ok()) << "useradd " << local->name << ": " << local->made.err;
    user = local->name;
    uid = local->uid;
    gid = local->gid;
    // The user may reach the node's root; only the state directory's modes (and
    // its group) decide what it reaches there.
    fs::permissions(work, fs::perms(0755));
    fs::permissions(root, fs::perms(0755));
    extraArgs = {"--supervisor", "builtin"};
  }

  void TearDown() override {
    // The services go first (as the apply of nothing would): no supervisor left.
    if (!declared.empty()) (void)mesh({"apply", declare("empty = true\n", "empty.toml")});
    Node::TearDown();
    local.reset();
  }

  std::string runDir() const { return root + "/run/mesh-host"; }

  // The user becomes a status reader, as docs/operating.md says to make one.
  void makeReader() {
    // /var and /var/lib as on any system (made 0750 here with the state directory).
    for (const auto& dir : {root + "/var", root + "/var/lib"}) ::chmod(dir.c_str(), 0755);
    for (const auto& dir : {stateDir(), runDir()}) {
      Result r = runCommand({"chgrp", "-R", std::to_string(gid), dir});
      ASSERT_EQ(r.code, 0) << r.err;
    }
  }

  Result asUser(std::vector<std::string> argv) const { return local->run(std::move(argv)); }

  // `mesh-host apply` that may take at most `seconds` (exit 124 past that): a root
  // that waits for the user's lock never returns otherwise.
  Result applyWithin(const std::string& decl, int seconds) {
    std::vector<std::string> argv = {"timeout",     "-k",    "5",       std::to_string(seconds),
                                     MESH_HOST_BIN, "apply", decl,      "--json",
                                     "--root",      root,    "--blobs", blobs,
                                     "--node",      "test"};
    argv.insert(argv.end(), extraArgs.begin(), extraArgs.end());
    return runCommand(argv);
  }

  // A builtin service: a shell that sleeps (or `exec`), `version` in its unit (so
  // that a new one restarts it), and a file beside it.
  std::string serviceDecl(int version, const std::string& unitExtra = "",
                          const std::string& exec = "{bundle}/bin/svc") {
    if (bundle.empty())
      bundle = publish(makeArchive({{"bin/svc", "#!/bin/sh\nexec sleep 300\n"}},
                                   "chmod 755 bin/svc && tar -cf out bin"));
    declared = declare(fmt::format(R"(
[module.svc.process.runtime]
bundle = "{}"
unit = {{ ExecStart = "{}", Restart = "no", Environment = "V={}"{} }}

[module.plain.file.config]
path = "/etc/plain/config"
content = "version = {}\n"
)",
                                   bundle, exec, version, unitExtra, version),
                       fmt::format("decl{}.toml", version));
    return declared;
  }

  static std::string outcome(const Result& r, const std::string& id) {
    try {
      return outcomeOf(nlohmann::json::parse(r.out), id).value("outcome", "?");
    } catch (const std::exception&) {
      return "unparsable";
    }
  }

  // The service's live pid, as root's status sees it; 0 when it does not run.
  pid_t servicePid() {
    Result s = mesh({"status", "--json"});
    try {
      auto j = nlohmann::json::parse(s.out);
      for (const auto& r : j["resources"])
        if (r["id"] == "svc.runtime" && r["service"]["running"].get<bool>())
          return r["service"]["pid"].get<pid_t>();
    } catch (const std::exception&) {
    }
    return 0;
  }

  std::unique_ptr<LocalUser> local;
  std::string user;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string bundle, declared;
};

// Item 4: the state lock, the store and a live supervisor's lock. The reader
// holds every lock it can take on everything it can open in the state and
// runtime directories — the state directory itself (once flocked by every
// writer), state.db, its -wal, the supervisor's files — and root's apply still
// runs through: changes the file, restarts the service. (Before: the apply waited
// for ever on the reader's flock of the state directory.)
TEST_F(HostileLocal, AStatusReaderHoldingEveryLockItCanTakeStallsNoApply) {
  Result first = apply(serviceDecl(1));
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  makeReader();
  // What a reader is for: status works, as the user, without root.
  Result status = asUser(
      {MESH_HOST_BIN, "status", "--root", root, "--node", "test", "--supervisor", "builtin"});
  EXPECT_EQ(status.code, 0) << status.out << status.err;
  EXPECT_NE(status.out.find("node test: 2 resource(s)"), std::string::npos) << status.out;

  Squatter squat(uid, gid, {"locks", stateDir(), runDir()});
  ASSERT_TRUE(squat.ready()) << squat.output();
  EXPECT_TRUE(squat.said("locked " + stateDir())) << squat.output();
  EXPECT_TRUE(squat.said("locked " + stateDir() + "/state.db")) << squat.output();
  EXPECT_FALSE(squat.said("locked " + stateDir() + "/state.db-shm")) << squat.output();
  EXPECT_TRUE(squat.said("denied " + stateDir() + "/locks")) << squat.output();

  const pid_t before = servicePid();
  EXPECT_GT(before, 0);
  Result second = applyWithin(serviceDecl(2), 60);
  EXPECT_EQ(second.code, 0) << "root waited for the reader's lock (124: timed out)\n"
                            << second.out << second.err;
  EXPECT_EQ(outcome(second, "plain.config"), "updated") << second.out;
  EXPECT_EQ(outcome(second, "svc.runtime"), "updated") << second.out;
  EXPECT_EQ(read("/etc/plain/config"), "version = 2\n");
  const pid_t after = servicePid();
  EXPECT_GT(after, 0);
  EXPECT_NE(after, before) << "not restarted";

  // And the reader still reads, while it holds all that, what the apply did.
  Result again =
      asUser({MESH_HOST_BIN, "history", "--root", root, "--node", "test", "--limit", "1"});
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("2 updated"), std::string::npos) << again.out;
}

// Item 4: a supervisor's lock while no supervisor holds it. The supervisor and
// its service die (kill -9); the reader read-locks everything in the runtime
// directory. (Before: its read lock on the service's `lock` made observe take it
// for a live supervisor, and every new supervisor answer "busy": the service
// "did not answer" in every cycle, never to run again.)
TEST_F(HostileLocal, AReadLockOnASupervisorsFilesKeepsNoSupervisorAway) {
  Result first = apply(serviceDecl(1));
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  makeReader();
  const pid_t service = servicePid();
  ASSERT_GT(service, 0);
  auto status = nlohmann::json::parse(read("/run/mesh-host/svc.service/status"));
  const pid_t supervisor = status["supervisor_pid"].get<pid_t>();
  ASSERT_GT(supervisor, 0);
  ASSERT_EQ(::kill(supervisor, SIGKILL), 0);
  ASSERT_EQ(::kill(-service, SIGKILL), 0);
  // Gone (reaped by init): no process of that pid runs, nor its supervisor.
  for (int i = 0; i < 500 && (::kill(service, 0) == 0 || ::kill(supervisor, 0) == 0); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));

  Squatter squat(uid, gid, {"locks", runDir()});
  ASSERT_TRUE(squat.ready()) << squat.output();
  EXPECT_FALSE(squat.said("locked " + runDir() + "/svc.service/supervisor.lock")) << squat.output();

  Result again = applyWithin(serviceDecl(1), 90);
  EXPECT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_EQ(outcome(again, "svc.runtime"), "updated") << again.out;
  EXPECT_GT(servicePid(), 0) << "the service does not run again";
}

// Item 4: the agent's lock. An older agent left agent.lock (0644) behind; the
// reader locks it and everything else it can open in the state directory. The
// agent still starts and runs its cycle. (Before: "another agent (pid …) is
// running", exit 2, naming a pid long gone.)
TEST_F(HostileLocal, ALockOnTheAgentsFilesKeepsNoAgentFromStarting) {
  const std::string decl = serviceDecl(1);
  Result first = apply(decl);
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  {
    std::ofstream(stateDir() + "/agent.lock") << "1\n";  // as an older agent left it
    ::chmod((stateDir() + "/agent.lock").c_str(), 0644);
  }
  // One agent of ours ran too: its lock file exists where the new one lives.
  {
    AgentProcess agent(agentArgv(decl, "1h"), extraEnv);
    ASSERT_TRUE(agent.nextSummary(std::chrono::seconds(60))) << agent.log();
  }
  makeReader();
  Squatter squat(uid, gid, {"locks", stateDir()});
  ASSERT_TRUE(squat.ready()) << squat.output();
  EXPECT_TRUE(squat.said("locked " + stateDir() + "/agent.lock") ||
              !fs::exists(stateDir() + "/agent.lock"))
      << squat.output();
  EXPECT_FALSE(squat.said("locked " + stateDir() + "/locks/agent")) << squat.output();

  AgentProcess agent(agentArgv(decl, "1h"), extraEnv);
  auto summary = agent.nextSummary(std::chrono::seconds(60));
  EXPECT_TRUE(summary) << "the agent did not run a cycle:\n" << agent.log();
  // A reader learns that it runs without any lock: from agent.pid.
  Result pidNote = asUser({"cat", stateDir() + "/agent.pid"});
  EXPECT_EQ(pidNote.out, std::to_string(agent.pid()) + "\n") << pidNote.err;
}

// Item 3: the notify socket of a Type=notify User= service. The user binds the
// abstract names supervisors used to give such a service (with 3,000 pid
// variants) and tries to make a socket where the new one lives; the service
// still starts. (Before: "cannot bind the notify socket … Address already in use".)
TEST_F(HostileLocal, SquattedNotifyNamesKeepNoUserServiceFromStarting) {
  if (!::getpwnam("nobody")) GTEST_SKIP() << "no user nobody here";
  if (::access("/usr/bin/systemd-notify", X_OK) != 0 && ::access("/bin/systemd-notify", X_OK) != 0)
    GTEST_SKIP() << "no systemd-notify";
  const std::string serviceDir = runDir() + "/svc.service";
  Result hex =
      runCommand({"sh", "-c", "printf %s \"$1\" | sha256sum | cut -c1-32", "sh", serviceDir});
  ASSERT_EQ(hex.code, 0);
  const std::string name = hex.out.substr(0, 32);
  Squatter squat(uid, gid,
                 {"bind", "3000", "@mesh-host-supervise/" + name, "--path",
                  "/run/mesh-host-notify/" + name, "/run/mesh-host-notify/x"});
  ASSERT_TRUE(squat.ready()) << squat.output();
  EXPECT_TRUE(squat.said("bound 3001")) << squat.output();
  EXPECT_TRUE(squat.said("denied /run/mesh-host-notify/" + name)) << squat.output();

  Result r = applyWithin(serviceDecl(1, ", Type = \"notify\", User = \"nobody\"",
                                     "/bin/sh -c 'systemd-notify --ready; exec sleep 300'"),
                         60);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcome(r, "svc.runtime"), "created") << r.out << r.err;
  EXPECT_GT(servicePid(), 0);
}

// Item 7: an EnvironmentFile= in a directory of the service's user, which that
// user replaces by a link to a file only root may read. The supervisor reads
// environment files as root: it refuses this one, and the secret never reaches
// the service. A root-owned file in a root directory is read as before.
TEST_F(HostileLocal, AnEnvironmentFileTheServiceUserCanReplaceIsRefused) {
  const std::string secret = work + "/shadow";
  std::ofstream(secret) << "STOLEN=root-only-7d1e\n";
  ::chmod(secret.c_str(), 0600);
  const std::string rootEnv = work + "/etc-env";
  fs::create_directories(rootEnv);
  std::ofstream(rootEnv + "/env") << "GREETING=hello\n";
  ::chmod((rootEnv + "/env").c_str(), 0600);
  const std::string userDir = work + "/userapp";
  fs::create_directories(userDir);
  ASSERT_EQ(::chown(userDir.c_str(), uid, gid), 0);
  Result made = asUser({"sh", "-c", "echo GREETING=mine > \"$1/env\"", "sh", userDir});
  ASSERT_EQ(made.code, 0) << made.err;

  const auto unit = [&](const std::string& envFile) {
    return fmt::format(", User = \"{}\", EnvironmentFile = \"{}\"", user, envFile);
  };
  const std::string exec = "/bin/sh -c 'echo got=$$STOLEN$$GREETING; exec sleep 300'";
  Result good = apply(serviceDecl(1, unit(rootEnv + "/env"), exec));
  EXPECT_EQ(good.code, 0) << good.out << good.err;
  EXPECT_EQ(outcome(good, "svc.runtime"), "created") << good.out << good.err;

  // The user plants its link, then the service is pointed at its file.
  Result plant =
      asUser({"sh", "-c", "rm \"$1/env\" && ln -s \"$2\" \"$1/env\"", "sh", userDir, secret});
  ASSERT_EQ(plant.code, 0) << plant.err;
  Result r = apply(serviceDecl(2, unit(userDir + "/env"), exec));
  EXPECT_NE(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcome(r, "svc.runtime"), "failed") << r.out;
  EXPECT_NE((r.out + r.err).find("refusing EnvironmentFile=" + userDir + "/env"), std::string::npos)
      << r.out << r.err;
  const std::string log = read("/var/lib/mesh-host/log/svc.service.log");
  EXPECT_EQ(log.find("root-only-7d1e"), std::string::npos) << log;

  // Its own plain file in its own directory: it could swap it for a link at any
  // moment, so it is refused too.
  Result unplant =
      asUser({"sh", "-c", "rm \"$1/env\" && echo GREETING=mine > \"$1/env\"", "sh", userDir});
  ASSERT_EQ(unplant.code, 0) << unplant.err;
  Result own = apply(serviceDecl(3, unit(userDir + "/env"), exec));
  EXPECT_EQ(outcome(own, "svc.runtime"), "failed") << own.out;
}

}  // namespace
}  // namespace mesh::e2e
