#include "namespace.hh"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <stdexcept>

#ifndef MESH_SDNS_SCRIPT
#error "MESH_SDNS_SCRIPT must name tests/systemd/sdns.sh"
#endif

namespace mesh::testing {

namespace {

SystemdNamespace* booted = nullptr;

// Stops the namespace when the binary's tests are over.
class StopAtEnd : public ::testing::Environment {
 public:
  void TearDown() override {
    if (booted) booted->stop();
  }
};
const auto* const registered = ::testing::AddGlobalTestEnvironment(new StopAtEnd);

bool onPath(const char* tool) {
  int status = 0;
  runCommand(std::string("command -v ") + tool + " >/dev/null 2>&1", &status);
  return status == 0;
}

}  // namespace

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string runCommand(const std::string& command, int* status) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(command.c_str(), "r"), ::pclose);
  if (!p) throw std::runtime_error("cannot run: " + command);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p.get())) > 0;) out.append(buf, n);
  int rc = ::pclose(p.release());
  if (status) *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
  return out;
}

std::string SystemdNamespace::unavailableReason() {
  if (::geteuid() != 0) return "needs root to boot systemd in a private namespace";
  for (const char* tool : {"unshare", "nsenter", "script", "busctl", "setsid"})
    if (!onPath(tool)) return std::string(tool) + " is not installed (scripts/install-deps)";
  if (::access("/lib/systemd/systemd", X_OK) != 0)
    return "/lib/systemd/systemd is not installed (scripts/install-deps)";
  return "";
}

SystemdNamespace& SystemdNamespace::shared() {
  if (booted) return *booted;
  (void)registered;
  char tmpl[] = "/tmp/mesh-sdns.XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  int status = 0;
  std::string out = runCommand(fmt::format("SDNS_OWNER_PID={} {} start {} 2>&1", ::getpid(),
                                           shellQuote(MESH_SDNS_SCRIPT), tmpl),
                               &status);
  if (status != 0) throw std::runtime_error("sdns.sh start failed: " + out);
  booted = new SystemdNamespace(tmpl);
  return *booted;
}

std::string SystemdNamespace::ctl(const std::string& args, bool check) const {
  int status = 0;
  std::string cmd = shellQuote(MESH_SDNS_SCRIPT) + " ctl " + shellQuote(dir_) + " " + args;
  std::string out = runCommand(cmd + " 2>&1", &status);
  if (check && status != 0)
    throw std::runtime_error("systemctl " + args + " exited " + std::to_string(status) + ": " +
                             out);
  return out;
}

std::string SystemdNamespace::property(const std::string& unit, const std::string& prop) const {
  std::string out = ctl("show -p " + prop + " --value " + shellQuote(unit));
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::vector<pid_t> SystemdNamespace::hostPids(const std::string& unit) const {
  std::istringstream in(runCommand(shellQuote(MESH_SDNS_SCRIPT) + " pids " + shellQuote(dir_) +
                                   " " + shellQuote(unit)));
  std::vector<pid_t> pids;
  for (pid_t p; in >> p;) pids.push_back(p);
  return pids;
}

void SystemdNamespace::stop() {
  if (!running_) return;
  running_ = false;
  runCommand(shellQuote(MESH_SDNS_SCRIPT) + " stop " + shellQuote(dir_) + " 2>&1");
}

}  // namespace mesh::testing
