#include "supervise/supervisor.hh"
#include "util/error.hh"

namespace mesh::supervise {
std::unique_ptr<Supervisor> openSystemd(const Options&) {
  throw Error("the systemd supervisor is not available in this build yet");
}
}  // namespace mesh::supervise
