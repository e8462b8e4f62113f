// What the tests start, and ending it. Header-only, for the e2e harness and the
// fleet fixture (and any test binary that starts mesh-host processes).
//
// tagTestRun: every process a test binary starts carries MESH_HOST_TEST_RUN=<tag>
// in its environment (set in the binary's own environment before main, so
// runCommand, AgentProcess, etcd, the systemd namespace and the supervisors they
// spawn all inherit it). tests/leftovers/check.sh, the last test of a ctest run,
// fails when a process carrying it is still alive. The binary itself does not
// carry it in /proc/<pid>/environ (setenv comes after exec), nor does ctest.
//
// Services the builtin supervisor starts do not inherit it: their environment is
// built from the unit alone, as under systemd. They are found through their
// supervisor instead (a service runs in the session its supervisor leads), or,
// once orphaned, through the test directory they still use (stdout on a FIFO in
// its state dir, MESH_CONFIG=… pointing into it).
//
// killProcessesUsing(dir): what a fixture calls in TearDown, also after a failed
// test, to end everything it started in `dir` before removing it.
#pragma once

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../support/files.hh"

namespace mesh::test {

inline constexpr const char* kTestRunVar = "MESH_HOST_TEST_RUN";

// `tag` names this build's test run (the mesh-host binary under test, which is
// what check.sh is given too). Returns true, to initialise a static with.
inline bool tagTestRun(const std::string& tag) {
  ::setenv(kTestRunVar, tag.c_str(), 1);
  return true;
}

namespace detail {

inline std::string linkOf(const std::string& path) {
  char buf[4096];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// /proc/<pid>/stat fields after the command name: state, ppid, pgrp, session.
struct Stat {
  char state = '?';
  pid_t ppid = 0, sid = 0;
};
inline bool statOf(pid_t pid, Stat* out) {
  const std::string s = slurp("/proc/" + std::to_string(pid) + "/stat");
  const auto close = s.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream in(s.substr(close + 1));
  pid_t pgrp = 0;
  in >> out->state >> out->ppid >> pgrp >> out->sid;
  return bool(in);
}

inline std::vector<pid_t> allPids() {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (end && *end == '\0' && pid > 0) out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(d);
  return out;
}

// `text` names something at or beneath `dir`.
inline bool names(const std::string& text, const std::string& dir) {
  return text == dir || text.find(dir + "/") != std::string::npos;
}

// Does `pid` use `dir`: its cwd, executable or an open file there (deleted or
// not), an argument or an environment variable naming a path in it?
inline bool uses(pid_t pid, const std::string& dir) {
  const std::string base = "/proc/" + std::to_string(pid);
  for (const char* l : {"/cwd", "/exe"})
    if (names(linkOf(base + l), dir)) return true;
  for (const char* f : {"/cmdline", "/environ"}) {
    const std::string text = slurp(base + f);
    for (size_t at = 0; at < text.size();) {
      size_t end = text.find('\0', at);
      if (end == std::string::npos) end = text.size();
      if (names(text.substr(at, end - at), dir)) return true;
      at = end + 1;
    }
  }
  if (DIR* d = ::opendir((base + "/fd").c_str())) {
    bool found = false;
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.' && names(linkOf(base + "/fd/" + e->d_name), dir)) {
        found = true;
        break;
      }
    ::closedir(d);
    if (found) return true;
  }
  return false;
}

}  // namespace detail

// Every live process that uses `dir` (detail::uses), with the processes of the
// sessions they lead (a builtin supervisor's service) and their descendants.
// Never this process.
inline std::set<pid_t> processesUsing(const std::string& dir) {
  std::set<pid_t> found;
  std::vector<std::pair<pid_t, detail::Stat>> live;
  for (pid_t pid : detail::allPids()) {
    detail::Stat st;
    if (pid == ::getpid() || !detail::statOf(pid, &st) || st.state == 'Z') continue;
    live.emplace_back(pid, st);
    if (detail::uses(pid, dir)) found.insert(pid);
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [pid, st] : live)
      if (!found.count(pid) && pid != ::getpid() && (found.count(st.sid) || found.count(st.ppid)))
        grew = found.insert(pid).second;
  }
  return found;
}

// Kills (SIGKILL) every process using `dir` and waits until they are gone; what
// it killed, as "pid: command line", for the test log. Stopped first, all of
// them, so that no supervisor starts a new service between two kills.
inline std::vector<std::string> killProcessesUsing(const std::string& dir) {
  std::vector<std::string> killed;
  for (int round = 0; round < 5; ++round) {
    const auto pids = processesUsing(dir);
    if (pids.empty()) break;
    for (pid_t pid : pids) ::kill(pid, SIGSTOP);
    for (pid_t pid : pids) {
      std::string cmd = slurp("/proc/" + std::to_string(pid) + "/cmdline");
      for (char& c : cmd)
        if (c == '\0') c = ' ';
      killed.push_back(std::to_string(pid) + ": " + cmd);
      ::kill(pid, SIGKILL);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (pid_t pid : pids) {
      for (;;) {
        ::waitpid(pid, nullptr, WNOHANG);  // our own child: reap it
        detail::Stat st;
        if (!detail::statOf(pid, &st) || st.state == 'Z' ||
            std::chrono::steady_clock::now() > deadline)
          break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  }
  return killed;
}

}  // namespace mesh::test
