// Turning systemd's terse job results and exit codes into reasons an operator can
// act on ("status 203/EXEC: ExecStart= could not be run …"). Pure; tested on values.
#pragma once

#include <cstdint>
#include <string>

namespace mesh::supervise::sdbus {

// A service's last main process, as the Service properties Result, ExecMainCode
// (CLD_EXITED, CLD_KILLED, CLD_DUMPED) and ExecMainStatus report it.
struct ExitInfo {
  std::string result;  // "exit-code", "signal", "core-dump", "timeout", …
  int32_t code = 0;
  int32_t status = 0;
};

// A job result other than "done", with what it means: "dependency: a unit it
// requires failed", "timeout: …"; "failed" and other plain ones as they are.
std::string explainJobResult(const std::string& jobResult);

// "Result=exit-code, exit status 1", "Result=exit-code, status 203/EXEC: …".
std::string explainExit(const ExitInfo& exit);

}  // namespace mesh::supervise::sdbus
