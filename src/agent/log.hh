// The agent's log: one line per event on stderr. Plain text by default; under
// journald each line carries its "<N>" priority prefix (sd-daemon(3)); with
// --log-format json one JSON object per line for log shippers. Never given a
// secret: what it logs (outcomes, summaries, declaration errors) is secret-free.
#pragma once

#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mesh::agent {

enum class LogFormat { Text, Json };
enum class Level { Error = 3, Warning = 4, Notice = 5, Info = 6 };  // syslog priorities

const char* levelName(Level l);  // "error", "warning", "notice", "info"

// One event rendered as the line(s) to write, each ending in '\n'. A multi-line
// text message (a declaration with several errors) gets the prefix on every line.
std::string formatLogLine(LogFormat format, bool journal, Level level, const std::string& msg,
                          const nlohmann::json& fields, int64_t unixMs);

// Under journald, what an event is sent as (sd_journal_sendv): MESSAGE, PRIORITY,
// SYSLOG_IDENTIFIER=mesh-host, and its fields — id, module, kind, outcome, reason
// and cycle as MESH_RESOURCE, MESH_MODULE, MESH_KIND, MESH_OUTCOME, MESH_REASON,
// MESH_CYCLE; any other as MESH_<KEY>.
std::vector<std::string> journalFields(Level level, const std::string& msg,
                                       const nlohmann::json& fields);

// Whether stderr is connected to journald: JOURNAL_STREAM names its device and
// inode (systemd.exec(5)); a stderr redirected elsewhere must not get prefixes.
bool stderrIsJournal();

class Logger {
 public:
  Logger(LogFormat format, bool journal, int fd = 2)
      : format_(format), journal_(journal), fd_(fd) {}

  // Safe from any thread: each event is one write(2), so lines never interleave.
  void log(Level level, const std::string& msg, const nlohmann::json& fields = nullptr);
  void info(const std::string& msg, const nlohmann::json& fields = nullptr) {
    log(Level::Info, msg, fields);
  }
  void error(const std::string& msg, const nlohmann::json& fields = nullptr) {
    log(Level::Error, msg, fields);
  }

 private:
  LogFormat format_;
  bool journal_;
  int fd_;
  std::mutex mutex_;
};

}  // namespace mesh::agent
