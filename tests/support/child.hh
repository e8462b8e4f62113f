// Starting a program as a child process, for the tests and the benchmarks alike
// (header-only, included by relative path): the argv handed to exec, and a child whose
// output goes to files.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace mesh::test {

// In a forked child: adds `env` ("K=V") to the environment and execs argv (argv[0] a
// path, or a name looked up in PATH). Exits 127 when the exec fails.
[[noreturn]] inline void execArgv(const std::vector<std::string>& argv,
                                  const std::vector<std::string>& env = {}) {
  for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  ::_exit(127);
}

// What a spawned child does to the files its output goes to.
enum class Output { Truncate, Append };

// Forks and execs argv with stdin from /dev/null, stdout in the file `out` and stderr in
// `err` (in `out` too when `err` is empty), and `env` ("K=V") added; the child's pid.
// The child exits 126 when a file does not open, 127 when the exec fails.
inline pid_t spawnChild(const std::vector<std::string>& argv, const std::string& out,
                        const std::string& err, Output mode = Output::Truncate,
                        const std::vector<std::string>& env = {}) {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int flags = O_WRONLY | O_CREAT | (mode == Output::Append ? O_APPEND : O_TRUNC);
    const int outFd = ::open(out.c_str(), flags, 0600);
    const int errFd = err.empty() ? outFd : ::open(err.c_str(), flags, 0600);
    const int inFd = ::open("/dev/null", O_RDONLY);
    if (outFd < 0 || errFd < 0 || inFd < 0) ::_exit(126);
    ::dup2(inFd, 0);
    ::dup2(outFd, 1);
    ::dup2(errFd, 2);
    execArgv(argv, env);
  }
  return pid;
}

// A wait status as a shell says it: the exit code, or 128 + the signal that ended it.
inline int exitCodeOf(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Waits for `pid` to end; its exitCodeOf.
inline int waitExit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return exitCodeOf(status);
}

}  // namespace mesh::test
