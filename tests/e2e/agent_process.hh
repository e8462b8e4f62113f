// A `mesh-host run` started by a test: its stderr (JSON log lines) read through
// a pipe, so a test waits for what the agent says it did instead of sleeping.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mesh::e2e {

using Json = nlohmann::json;
using std::chrono::milliseconds;

class AgentProcess {
 public:
  AgentProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);
  ~AgentProcess();  // SIGKILL when still running
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int sig) const;

  // The next log line (JSON) that `match` accepts, within `within`; nullopt on
  // timeout or when the agent exits first. Lines before it are consumed.
  std::optional<Json> waitFor(const std::function<bool(const Json&)>& match, milliseconds within);
  // Waits until what it logged (any format) holds `text`, within `within`; false on
  // timeout or when the agent exits first.
  bool waitForText(const std::string& text, milliseconds within);
  // The next cycle summary line, optionally with this trigger.
  std::optional<Json> nextSummary(milliseconds within, const std::string& trigger = "");

  // Waits for the agent to exit (reading its output meanwhile so it never blocks
  // on a full pipe); its exit code (128+signal when killed), nullopt on timeout.
  std::optional<int> waitExit(milliseconds within);

  // Everything it logged so far, for failure messages.
  const std::string& log() const { return all_; }
  // Every JSON line seen so far.
  const std::vector<Json>& lines() const { return lines_; }

  static bool isSummary(const Json& j);

 private:
  // Reads what is available within `timeoutMs`; false at end of file.
  bool pump(int timeoutMs, bool* gotData = nullptr);

  pid_t pid_ = -1;
  int err_ = -1;
  bool eof_ = false;
  std::optional<int> exitCode_;
  std::string partial_, all_;
  std::vector<Json> lines_;
  size_t consumed_ = 0;  // lines_ already offered to waitFor
};

}  // namespace mesh::e2e
