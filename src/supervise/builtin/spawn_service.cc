#include "supervise/builtin/spawn_service.hh"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <optional>
#include <vector>

#include "util/error.hh"
#include "util/fd.hh"
#include "util/fs.hh"
#include "util/trusted_path.hh"

namespace mesh::supervise::builtin {

namespace {

using Words = std::vector<std::string>;

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

struct Identity {
  bool changeUser = false, changeGroup = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  std::string name, home, shell;
};

std::optional<unsigned long> numeric(const std::string& s) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoul(s);
}

Identity resolveIdentity(const ServiceConfig& c) {
  Identity id;
  if (!c.user.empty()) {
    errno = 0;
    auto n = numeric(c.user);
    struct passwd* pw = n ? ::getpwuid(static_cast<uid_t>(*n)) : ::getpwnam(c.user.c_str());
    if (!pw && !n) throw Error("User={}: no such user", c.user);
    id.changeUser = id.changeGroup = true;
    id.uid = pw ? pw->pw_uid : static_cast<uid_t>(*n);
    id.gid = pw ? pw->pw_gid : static_cast<gid_t>(*n);
    if (pw) {
      id.name = pw->pw_name;
      id.home = pw->pw_dir;
      id.shell = pw->pw_shell;
    }
  }
  if (!c.group.empty()) {
    auto n = numeric(c.group);
    struct group* gr = n ? nullptr : ::getgrnam(c.group.c_str());
    if (!gr && !n) throw Error("Group={}: no such group", c.group);
    id.changeGroup = true;
    id.gid = gr ? gr->gr_gid : static_cast<gid_t>(*n);
  }
  if (id.changeUser && !id.name.empty()) {
    // The user's supplementary groups, as initgroups() would set them.
    int count = 32;
    for (;;) {
      id.groups.resize(static_cast<size_t>(count));
      int got = count;
      if (::getgrouplist(id.name.c_str(), id.gid, id.groups.data(), &got) >= 0) {
        id.groups.resize(static_cast<size_t>(got));
        break;
      }
      count = got > count ? got : count * 2;
    }
  } else if (id.changeGroup) {
    id.groups = {id.gid};
  }
  return id;
}

// argv[0] without a '/' is looked up in the service's PATH, as systemd does.
std::string resolveExecutable(const std::string& name, const std::string& path) {
  if (name.find('/') != std::string::npos) return name;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string candidate = path.substr(start, end - start) + "/" + name;
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  throw Error("cannot execute {}: not found in PATH ({})", name, path);
}

enum Step : int { kSetpgid, kStdio, kSetgroups, kSetgid, kSetuid, kChdir, kExec };

[[noreturn]] void childFailed(int errWrite, int step) {
  int report[2] = {step, errno};
  (void)!::write(errWrite, report, sizeof report);
  ::_exit(127);
}

// Only async-signal-safe calls from here to exec: the parent may have threads.
[[noreturn]] void childSide(int errWrite, int devNull, int outputFd, const Identity& id,
                            const char* wd, bool wdOptional, const char* path, char** argv,
                            char** envp) {
  auto fail = [&](int step) { childFailed(errWrite, step); };
  if (::setpgid(0, 0) != 0) fail(kSetpgid);
  sigset_t all;
  sigemptyset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
  if (::dup2(devNull, 0) < 0 || ::dup2(outputFd, 1) < 0 || ::dup2(outputFd, 2) < 0) fail(kStdio);
  ::umask(022);
  if (id.changeGroup && ::setgroups(id.groups.size(), id.groups.data()) != 0) fail(kSetgroups);
  if (id.changeGroup && ::setgid(id.gid) != 0) fail(kSetgid);
  if (id.changeUser && ::setuid(id.uid) != 0) fail(kSetuid);
  if (::chdir(wd) != 0 && !(wdOptional && ::chdir("/") == 0)) fail(kChdir);
  ::execve(path, argv, envp);
  childFailed(errWrite, kExec);
}

// An EnvironmentFile=, read as the supervisor (root) for a service that may run
// as another user: only a file that no one but root (or the supervisor's user)
// can replace — the file itself theirs and writable by no one else, never a
// link, and every directory on the way trusted as the state directory is
// (util/trusted_path.hh) — else a service user could plant a link to a file
// only root may read (/etc/shadow) and get its lines in its environment.
// nullopt when it does not exist.
std::optional<std::string> readEnvironmentFile(const std::string& path) {
  const auto refuse = [&](const std::string& why) {
    return InputError(
        "refusing EnvironmentFile={}: {}; the supervisor reads it as uid {}, so it must be a "
        "file only root can replace (as key files are)",
        path, why, ::geteuid());
  };
  try {
    requireTrustedDirectory(parentOf(path), /*mayBeMissing=*/true);
  } catch (const Error& e) {
    throw refuse(e.what());
  }
  // O_NONBLOCK: a FIFO put there must not hang the open; it is refused below.
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    if (errno == ELOOP) throw refuse("it is a symbolic link");
    throwSys(fmt::format("cannot open {}", path));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throwSys(fmt::format("cannot inspect {}", path));
  if (!S_ISREG(st.st_mode)) throw refuse("it is not a regular file");
  if (st.st_uid != 0 && st.st_uid != ::geteuid())
    throw refuse(fmt::format("it is owned by uid {}", st.st_uid));
  if ((st.st_mode & 022) != 0)
    throw refuse(fmt::format("it is writable by {} (mode {:04o})",
                             (st.st_mode & 020) ? "its group" : "others", st.st_mode & 07777));
  std::string out;
  readChunks(fd.get(), path, [&](std::string_view chunk) { out.append(chunk); });
  return out;
}

}  // namespace

std::map<std::string, std::string> serviceEnvironment(const ServiceConfig& c,
                                                      const std::string& notifySocket) {
  std::map<std::string, std::string> env{{"PATH", kDefaultPath}};
  if (!notifySocket.empty()) env["NOTIFY_SOCKET"] = notifySocket;
  if (!c.user.empty()) {
    Identity id = resolveIdentity(c);
    if (!id.name.empty()) {
      env["USER"] = env["LOGNAME"] = id.name;
      env["HOME"] = id.home;
      env["SHELL"] = id.shell;
    }
  }
  for (const auto& [k, v] : c.environment) env[k] = v;
  for (const auto& f : c.environmentFiles) {
    std::optional<std::string> text;
    try {
      text = readEnvironmentFile(f.path);
    } catch (SysError& e) {
      if (f.optional) continue;
      e.addContext("EnvironmentFile=" + f.path);
      throw;
    }
    if (!text) {
      if (f.optional) continue;
      throw Error("EnvironmentFile={}: no such file (prefix the path with '-' if it is optional)",
                  f.path);
    }
    for (auto& [k, v] : parseEnvironmentFile(*text)) env[k] = v;
  }
  return env;
}

std::optional<std::pair<uid_t, gid_t>> serviceUser(const ServiceConfig& c) {
  if (c.user.empty()) return std::nullopt;
  const Identity id = resolveIdentity(c);
  return std::pair{id.uid, id.gid};
}

pid_t spawnService(const ServiceConfig& c, int outputFd, const std::string& notifySocket) {
  Identity id = resolveIdentity(c);
  auto env = serviceEnvironment(c, notifySocket);
  std::vector<std::string> args = c.substitute ? substituteEnvironment(c.argv, env) : c.argv;
  auto execWords = c.substitute ? substituteEnvironment({c.execPath}, env) : Words{c.execPath};
  if (args.empty() || execWords.size() != 1 || execWords[0].empty())
    throw Error("ExecStart={}: the command expands to no single program", c.execPath);
  const std::string& execPath = execWords[0];
  std::string path = resolveExecutable(execPath, env["PATH"]);

  std::vector<std::string> envStrings;
  envStrings.reserve(env.size());
  for (const auto& [k, v] : env) envStrings.push_back(std::string(k).append("=").append(v));
  std::vector<char*> argv, envp;
  argv.reserve(args.size() + 1);
  envp.reserve(envStrings.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : envStrings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string wd = c.workingDirectory.empty() ? "/" : c.workingDirectory;

  Fd devNull(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!devNull) throwSys("cannot open /dev/null");
  int errPipe[2];
  if (::pipe2(errPipe, O_CLOEXEC) != 0) throwSys("cannot create a pipe");
  Fd errRead(errPipe[0]), errWrite(errPipe[1]);

  pid_t pid = ::fork();
  if (pid < 0) throwSys("cannot fork");
  if (pid == 0)
    childSide(errWrite.get(), devNull.get(), outputFd, id, wd.c_str(), c.workingDirectoryOptional,
              path.c_str(), argv.data(), envp.data());
  errWrite.reset();

  int report[2] = {0, 0};
  ssize_t n;
  do n = ::read(errRead.get(), report, sizeof report);
  while (n < 0 && errno == EINTR);
  if (n == 0) return pid;  // the pipe closed on exec: it runs

  ::waitpid(pid, nullptr, 0);
  const char* why = n == sizeof report ? std::strerror(report[1]) : "unknown error";
  switch (n == sizeof report ? report[0] : -1) {
    case kSetpgid:
      throw Error("cannot create a process group: {}", why);
    case kStdio:
      throw Error("cannot set up stdin/stdout/stderr: {}", why);
    case kSetgroups:
      throw Error("cannot set the supplementary groups: {}", why);
    case kSetgid:
      throw Error("cannot change to group {}: {}", id.gid, why);
    case kSetuid:
      throw Error("cannot change to user {}: {}", c.user, why);
    case kChdir:
      throw Error("cannot change to directory {}: {}", wd, why);
    case kExec:
      throw Error("cannot execute {}: {}", path, why);
    default:
      throw Error("the service process failed before exec: {}", why);
  }
}

}  // namespace mesh::supervise::builtin
