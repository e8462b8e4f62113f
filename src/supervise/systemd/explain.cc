#include "supervise/systemd/explain.hh"

#include <fmt/format.h>
#include <signal.h>

#include <cstring>

namespace mesh::supervise::sdbus {

namespace {

// systemd's own exit statuses for a service that never got to run its program
// (systemd.exec(5), "Process Exit Codes"), for the mistakes a declaration can make.
const char* explainSystemdStatus(int32_t status) {
  switch (status) {
    case 200:
      return "200/CHDIR: WorkingDirectory= could not be entered";
    case 203:
      return "203/EXEC: ExecStart= could not be run; is the program there and executable?";
    case 209:
      return "209/STDOUT: standard output could not be set up";
    case 216:
      return "216/GROUP: the Group= could not be found";
    case 217:
      return "217/USER: the User= could not be found";
    case 226:
      return "226/NAMESPACE: the file system sandbox could not be set up";
    default:
      return nullptr;
  }
}

}  // namespace

std::string explainJobResult(const std::string& jobResult) {
  std::string why;
  if (jobResult == "timeout")
    why = "it did not finish within its TimeoutStartSec=/TimeoutStopSec=";
  else if (jobResult == "canceled")
    why = "another job for the unit replaced it";
  else if (jobResult == "dependency")
    why = "a unit it requires failed";
  else if (jobResult == "assert")
    why = "an Assert…= condition of the unit is not met";
  else if (jobResult == "unsupported")
    why = "the unit does not support it";
  return why.empty() ? jobResult : jobResult + ": " + why;
}

std::string explainExit(const ExitInfo& e) {
  std::string out = fmt::format("Result={}", e.result.empty() ? "unknown" : e.result);
  if (e.code == CLD_EXITED) {
    if (const char* s = explainSystemdStatus(e.status))
      out += fmt::format(", status {}", s);
    else
      out += fmt::format(", exit status {}", e.status);
  } else if (e.code == CLD_KILLED || e.code == CLD_DUMPED) {
    out += fmt::format(", killed by signal {} ({})", e.status, ::strsignal(e.status));
  }
  return out;
}

}  // namespace mesh::supervise::sdbus
