#include "supervise/supervisor.hh"

#include <unistd.h>

#include "util/error.hh"
#include "util/fs.hh"

namespace mesh::supervise {

namespace {

// systemd is PID 1 when /run/systemd/system exists (sd_booted's test) and
// /proc/1/comm says so.
bool systemdIsPid1() {
  if (!lstatPath("/run/systemd/system")) return false;
  auto comm = readFile("/proc/1/comm");
  return comm && comm->rfind("systemd", 0) == 0;
}

}  // namespace

namespace {

[[noreturn]] void cannotDriveForeign(const Supervisor& s, const std::string& name) {
  throw InputError(
      "the {} supervisor cannot drive {}, a unit mesh-host did not install: the service kind "
      "needs --supervisor systemd",
      s.name(), name);
}

}  // namespace

ForeignUnit Supervisor::observeForeign(const std::string& name) {
  cannotDriveForeign(*this, name);
}
void Supervisor::setDropin(const std::string& name, const std::optional<std::string>&) {
  cannotDriveForeign(*this, name);
}
void Supervisor::setEnabled(const std::string& name, const ForeignUnit&, bool) {
  cannotDriveForeign(*this, name);
}

std::unique_ptr<Supervisor> openSupervisor(const std::string& which, const Options& o) {
  if (which == "builtin") return openBuiltin(o);
  if (which == "systemd") return openSystemd(o);
  if (which == "auto") return systemdIsPid1() ? openSystemd(o) : openBuiltin(o);
  throw InputError("--supervisor {}: expected auto, builtin or systemd", which);
}

}  // namespace mesh::supervise
