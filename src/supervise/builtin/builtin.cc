#include "supervise/supervisor.hh"
#include "util/error.hh"

namespace mesh::supervise {
std::unique_ptr<Supervisor> openBuiltin(const Options&) {
  throw Error("the builtin supervisor is not available in this build yet");
}
}  // namespace mesh::supervise
