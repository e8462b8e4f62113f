#include "systemd_env.hh"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace mesh::e2e {

namespace {
std::string& bootError() {
  static std::string e;
  return e;
}
}  // namespace

bool SystemdNamespace::available(std::string* why) {
  if (::geteuid() != 0) {
    *why = "booting a namespace systemd needs root";
    return false;
  }
  if (!std::filesystem::exists("/lib/systemd/systemd") ||
      !std::filesystem::exists("/usr/bin/unshare")) {
    *why = "systemd or unshare is not installed (scripts/install-deps installs them)";
    return false;
  }
  instance();
  if (!bootError().empty()) {
    *why = bootError();
    return false;
  }
  return true;
}

SystemdNamespace& SystemdNamespace::instance() {
  static SystemdNamespace ns;
  return ns;
}

SystemdNamespace::SystemdNamespace() {
  char tmpl[] = "/tmp/mesh-sdns.XXXXXX";
  dir_ = ::mkdtemp(tmpl);
  unitDir_ = dir_ + "/etc";
  Result r = runCommand({"bash", SDNS_SCRIPT, "start", dir_},
                        {{"SDNS_OWNER_PID", std::to_string(::getpid())}});
  if (r.code != 0) {
    bootError() = "cannot boot a namespace systemd: " + r.out + r.err;
    return;
  }
  Result env = runCommand({"bash", SDNS_SCRIPT, "env", dir_});
  const std::string key = "DBUS_SYSTEM_BUS_ADDRESS=";
  auto at = env.out.find(key);
  if (at == std::string::npos) {
    bootError() = "sdns.sh env printed no bus address: " + env.out + env.err;
    return;
  }
  bus_ = env.out.substr(at + key.size());
  bus_ = bus_.substr(0, bus_.find_first_of("\n "));
}

SystemdNamespace::~SystemdNamespace() {
  runCommand({"bash", SDNS_SCRIPT, "stop", dir_});
  std::filesystem::remove_all(dir_);
}

Result SystemdNamespace::ctl(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"bash", SDNS_SCRIPT, "ctl", dir_};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv);
}

}  // namespace mesh::e2e
