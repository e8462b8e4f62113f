// The builtin supervisor's reading of a unit: the [Service] section of the unit
// text, turned into what it takes to run the service. Pure parsing — no I/O — so
// every rule tests on plain strings.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/timespan.hh"

namespace mesh::supervise::builtin {

// [Service] keys with their values in file order; a key may repeat, and an
// empty assignment ("Environment=") resets the values given before it.
using ServiceKeys = std::map<std::string, std::vector<std::string>>;

// Parses the [Service] section of a unit text: `Key=Value` lines, '#'/';'
// comments, a trailing backslash continues a line.
[[nodiscard]] ServiceKeys parseServiceSection(std::string_view unitText);

using EnvVars = std::vector<std::pair<std::string, std::string>>;

enum class RestartPolicy { No, Always, OnSuccess, OnFailure, OnAbnormal, OnAbort };

// Type=: notify waits for READY=1 over NOTIFY_SOCKET; simple and exec (and, with
// a warning, any other type) are started once exec succeeded.
enum class ServiceType { Simple, Notify };

// NotifyAccess=: whose sd_notify messages count. All (the main process, its
// process group and its descendants) is the default here — systemd's is main —
// so that a shell script's `systemd-notify --ready` works without saying so.
// exec means main here: there are no ExecStartPre=/ExecStartPost= processes.
enum class NotifyAccess { None, Main, All };

constexpr int64_t kInfinity = kTimeSpanInfinity;

struct ServiceConfig {
  std::vector<std::string> argv;  // ExecStart words, before $VAR substitution
  std::string execPath;           // argv[0], or the first word with the '@' prefix
  bool ignoreFailure = false;     // '-' prefix: a non-zero exit counts as clean
  bool substitute = true;         // ':' prefix turns $VAR substitution off
  EnvVars environment;            // Environment=, in order
  struct EnvFile {
    std::string path;
    bool optional = false;  // '-' prefix
  };
  std::vector<EnvFile> environmentFiles;
  std::string workingDirectory;  // "" → "/"
  bool workingDirectoryOptional = false;
  std::string user, group;  // names or numeric ids; "" → unchanged (root)
  ServiceType type = ServiceType::Simple;
  NotifyAccess notifyAccess = NotifyAccess::All;
  RestartPolicy restart = RestartPolicy::No;
  int64_t restartUs = 100'000;         // RestartSec=, systemd's default 100ms
  int64_t timeoutStopUs = 10'000'000;  // TimeoutStopSec=; kInfinity: never SIGKILL
  // TimeoutStartSec=, systemd's default 90s: how long a Type=notify service may
  // take to send READY=1; kInfinity: wait for ever.
  int64_t timeoutStartUs = 90'000'000;
  uint64_t logMaxBytes = 1 << 20;  // X-LogMaxBytes=
  // ExecReload=, with the same prefixes as ExecStart: run (with $MAINPID set) on
  // a reload request; empty argv: the reload sends SIGHUP to the main process.
  struct Command {
    std::vector<std::string> argv;
    std::string execPath;
    bool ignoreFailure = false;
    bool substitute = true;
  };
  Command reload;
};

// Throws mesh::Error naming the key and value it cannot use.
[[nodiscard]] ServiceConfig parseServiceConfig(const ServiceKeys& keys);

// Splits a command line like systemd: whitespace separates words, "…" and '…'
// quote, C-style backslash escapes. Throws mesh::Error on an unterminated quote.
std::vector<std::string> splitWords(std::string_view line);

// `A=1 "B=two words"` → {A,1},{B,two words}. Throws on a word without '='.
[[nodiscard]] EnvVars parseEnvironmentValue(std::string_view value);

// An EnvironmentFile's text: KEY=VALUE lines, '#'/';' comments, optional
// `export `, values optionally quoted.
[[nodiscard]] EnvVars parseEnvironmentFile(std::string_view text);

// "5", "5s", "500ms", "1min 30s", "1.5h", "infinity" → µs (kInfinity);
// nullopt when malformed: the program's one parser (util/timespan.hh).
using ::mesh::parseTimeSpanUs;

// systemd's ExecStart substitution: a word that is exactly `$NAME` becomes the
// value split at whitespace (no word when unset); `${NAME}` inside a word
// becomes the value ("" when unset); `$$` is a literal '$'.
std::vector<std::string> substituteEnvironment(const std::vector<std::string>& argv,
                                               const std::map<std::string, std::string>& env);

// Every [Service] setting the builtin supervisor cannot honour, by key (and
// value or prefix where only that is the problem: "Type=forking",
// "ExecStart=+…"). What it honours is marked in util/unit_keys.hh.
std::vector<std::string> unsupportedServiceKeys(const ServiceKeys& keys);

}  // namespace mesh::supervise::builtin
