#include "apply/kinds/account_tools.hh"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <atomic>
#include <nlohmann/json.hpp>

#include "util/error.hh"
#include "util/fd.hh"
#include "util/text_safe.hh"

extern char** environ;

namespace mesh::apply {

namespace {

std::atomic<uint64_t> runs{0};

}  // namespace

uint64_t accountToolRuns() {
  return runs.load();
}

void runAccountTool(Context& ctx, const std::string& tool, std::vector<std::string> args) {
  std::vector<std::string> argv{"/usr/sbin/" + tool};
  if (ctx.settings().root != "/") {
    argv.push_back("--root");
    argv.push_back(ctx.settings().root);
  }
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);

  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0) throwSys("cannot make a pipe for " + tool);
  Fd readEnd(pipeFds[0]), writeEnd(pipeFds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, writeEnd.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, writeEnd.get(), 2);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    errno = rc;
    throwSys("cannot run " + argv[0] + " (install the passwd package)");
  }
  ++runs;
  writeEnd = Fd();
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(readEnd.get(), buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (out.size() < 4096) out.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  for (auto& c : out)
    if (c == '\n') c = ' ';
  throw Error("{} failed ({} {}): {}", tool, WIFEXITED(status) ? "exit" : "signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
              out.empty() ? "no message" : shownText(out));
}

std::string AccountObserved::str() const {
  nlohmann::json j{{"name", name}};
  if (created) j["created"] = true;
  return jsonData(j);
}

AccountObserved AccountObserved::parse(const std::string& text) {
  AccountObserved o;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return o;
  o.name = j.value("name", "");
  o.created = j.value("created", false);
  return o;
}

Removal removeAccount(Step& step, const state::Record& rec, const char* what, const char* tool,
                      bool exists, const char* filesLeft) {
  Context& ctx = step.ctx();
  const auto prev = AccountObserved::parse(rec.observed);
  if (prev.name.empty()) return Removal::released("no account recorded");
  if (!prev.created)
    return Removal::released(
        fmt::format("{} {} was there before mesh-host: left in place", what, prev.name));
  if (!exists) return Removal::released(fmt::format("{} {} is gone already", what, prev.name));
  step.change([&] { runAccountTool(ctx, tool, {prev.name}); });
  return Removal::removed(fmt::format("{} {} {} ({} left in place)",
                                      ctx.planning() ? "would delete" : "deleted", what, prev.name,
                                      filesLeft));
}

}  // namespace mesh::apply
