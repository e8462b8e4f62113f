// A temp state dir (and runtime dir) per test, the builtin backend on it, and
// waits that watch (inotify, pidfd) instead of sleeping. TearDown stops and
// kills every process a test left behind.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "../../support/temp_dir.hh"
#include "supervise/builtin/service_files.hh"
#include "supervise/supervisor.hh"
#include "util/fd.hh"
#include "util/fs.hh"

namespace mesh::supervise::test {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

inline Unit makeUnit(const std::string& name, const KeyValues& service) {
  Unit u;
  u.name = name;
  u.text = "[Unit]\nDescription=test " + name + "\n\n[Service]\n";
  for (const auto& [k, v] : service) {
    u.text += k + "=" + v + "\n";
    u.service[k].push_back(v);
  }
  u.text += "\n[Install]\nWantedBy=multi-user.target\n";
  return u;
}

// Waits until `ready()` holds, re-checking whenever something changes in `dir`.
inline bool awaitInDir(const std::string& dir, const std::function<bool()>& ready,
                       int timeoutMs = 10'000) {
  Fd in(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  ::inotify_add_watch(in.get(), dir.c_str(),
                      IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_MODIFY | IN_DELETE);
  const int64_t deadline = builtin::monotonicUs() + int64_t{timeoutMs} * 1000;
  for (;;) {
    if (ready()) return true;
    int64_t left = deadline - builtin::monotonicUs();
    if (left <= 0) return false;
    pollfd p{in.get(), POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(left / 1000) + 1);
    char buf[4096];
    while (::read(in.get(), buf, sizeof buf) > 0) {
    }
  }
}

// Waits for the process to exit (a zombie counts as gone).
inline bool awaitGone(pid_t pid, int timeoutMs = 10'000) {
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) return errno == ESRCH;
  pollfd p{pidfd.get(), POLLIN, 0};
  return ::poll(&p, 1, timeoutMs) == 1;
}

inline bool alive(pid_t pid) {
  return builtin::processStartTicks(pid).has_value();
}

class BuiltinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::chmod(dir.c_str(), 0755);
    sup = openBuiltin(options());
  }

  Options options() const {
    Options o;
    o.stateDir = stateDir;
    o.runtimeDir = runtimeDir;
    o.supervisorExe = MESH_SUPERVISE_EXE;
    return o;
  }

  void TearDown() override {
    std::error_code ec;
    std::set<std::string> names;
    for (const auto& where : {stateDir + "/services", runtimeDir})
      for (auto& e : std::filesystem::directory_iterator(where, ec))
        names.insert(e.path().filename());
    for (const auto& name : names) {
      try {
        sup->stop(name);
      } catch (const std::exception& ex) {
        ADD_FAILURE() << "stop in TearDown: " << ex.what();
      }
      killLeftovers(name);
    }
    for (pid_t pid : extraPids)
      if (alive(pid)) ::kill(pid, SIGKILL);
  }

  void killLeftovers(const std::string& name) {
    auto st = builtin::readStatus(paths(name).status);
    if (!st) st = builtin::readStatus(paths(name).legacy().status);
    if (!st) return;
    if (st->pid > 0 && builtin::processIsAlive(st->pid, st->startTicks)) {
      ADD_FAILURE() << name << ": service pid " << st->pid << " outlived stop()";
      ::kill(-st->pid, SIGKILL);
      ::kill(st->pid, SIGKILL);
    }
    auto cmdline = readFile("/proc/" + std::to_string(st->supervisorPid) + "/cmdline");
    if (st->supervisorPid > 0 && cmdline && cmdline->find(dir) != std::string::npos &&
        !awaitGone(st->supervisorPid, 5000)) {
      ADD_FAILURE() << name << ": supervisor " << st->supervisorPid << " outlived stop()";
      ::kill(st->supervisorPid, SIGKILL);
    }
  }

  builtin::ServicePaths paths(const std::string& name) const {
    return builtin::ServicePaths::of(stateDir, runtimeDir, name);
  }
  builtin::Status status(const std::string& name) const {
    return builtin::readStatus(paths(name).status).value_or(builtin::Status{});
  }
  ServiceState observe(const std::string& name) { return sup->observe({name}, true).at(name); }
  std::string log(const std::string& name) const { return readFile(paths(name).log).value_or(""); }

  // Installs and starts a unit; returns its pid.
  pid_t startUnit(const std::string& name, const KeyValues& service) {
    sup->install(makeUnit(name, service));
    sup->start(name);
    return observe(name).pid;
  }

  bool awaitStatus(const std::string& name, const std::function<bool(const builtin::Status&)>& ok,
                   int timeoutMs = 10'000) {
    return awaitInDir(
        paths(name).runDir, [&] { return ok(status(name)); }, timeoutMs);
  }
  bool awaitLog(const std::string& name, const std::string& text, int timeoutMs = 10'000) {
    return awaitInDir(
        stateDir + "/log", [&] { return log(name).find(text) != std::string::npos; }, timeoutMs);
  }
  bool awaitFile(const std::string& path, int timeoutMs = 10'000) {
    return awaitInDir(
        parentOf(path), [&] { return lstatPath(path).has_value(); }, timeoutMs);
  }

  mesh::test::TempDir tmp{"mesh-sv"};
  std::string dir = tmp.path, stateDir = dir + "/state", runtimeDir = dir + "/run";
  std::unique_ptr<Supervisor> sup;
  std::vector<pid_t> extraPids;
};

// demo.service writing a heartbeat (a counter, in `beat`) every 20 ms, for the tests
// that kill its supervisor with -9 and look at what is left running.
class BeatingServiceTest : public BuiltinTest {
 protected:
  // Starts demo.service; its pid.
  pid_t startBeating() {
    beat = dir + "/beat";
    return startUnit("demo.service",
                     {{"ExecStart",
                       "/bin/sh -c 'n=0; while :; do n=$$((n+1)); echo tick $$n; "
                       "echo $$n > " +
                           beat + ".tmp; mv " + beat + ".tmp " + beat + "; sleep 0.02; done'"},
                      {"Restart", "always"}});
  }
  // The last heartbeat written; 0 before the first.
  int beats() { return std::atoi(readFile(beat).value_or("0").c_str()); }
  // Kills demo.service's supervisor with -9 and waits for it to be gone, its lock with it.
  void killSupervisor() {
    pid_t supervisor = status("demo.service").supervisorPid;
    ASSERT_GT(supervisor, 0);
    ASSERT_EQ(::kill(supervisor, SIGKILL), 0);
    ASSERT_TRUE(awaitGone(supervisor));
    ASSERT_FALSE(builtin::supervisorHoldsLock(paths("demo.service").lock));
  }

  std::string beat;
};

}  // namespace mesh::supervise::test
