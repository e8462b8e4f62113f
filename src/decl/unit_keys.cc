#include "decl/unit_keys.hh"

#include "decl/fields.hh"
#include "util/timespan.hh"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <vector>

namespace mesh::decl {

namespace {

enum class Value { Any, Boolean, TimeSpan, OneOf };

struct KeyRule {
  Value value = Value::Any;
  std::vector<std::string_view> choices;  // OneOf
};

// systemd.unit(5) [Unit]/[Install], systemd.service(5), systemd.exec(5),
// systemd.kill(5) and systemd.resource-control(5), as of systemd 252.
const std::map<std::string_view, KeyRule>& rules() {
  static const std::map<std::string_view, KeyRule> table = [] {
    std::map<std::string_view, KeyRule> t;
    for (std::string_view k :
         {// [Unit]
          "Description", "Documentation", "Wants", "Requires", "Requisite", "BindsTo", "PartOf",
          "Upholds", "Conflicts", "Before", "After", "OnFailure", "OnSuccess", "PropagatesReloadTo",
          "ReloadPropagatedFrom", "JoinsNamespaceOf", "RequiresMountsFor", "OnFailureJobMode",
          "StartLimitBurst", "StartLimitAction", "RebootArgument", "ConditionPathExists",
          "ConditionPathIsDirectory", "ConditionFileNotEmpty", "ConditionUser", "ConditionHost",
          "AssertPathExists", "SourcePath",
          // [Install]
          "WantedBy", "RequiredBy", "Alias", "Also", "DefaultInstance",
          // [Service]
          "PIDFile", "BusName", "ExecStart", "ExecStartPre", "ExecStartPost", "ExecCondition",
          "ExecReload", "ExecStop", "ExecStopPost", "RestartPreventExitStatus",
          "RestartForceExitStatus", "SuccessExitStatus", "FileDescriptorStoreMax", "USBFunction",
          "Sockets", "OOMPolicy", "ReloadSignal",
          // exec
          "WorkingDirectory", "RootDirectory", "RootImage", "User", "Group", "DynamicUser",
          "SupplementaryGroups", "PAMName", "Environment", "EnvironmentFile", "PassEnvironment",
          "UnsetEnvironment", "UMask", "Nice", "OOMScoreAdjust", "CPUSchedulingPolicy",
          "CPUSchedulingPriority", "CPUAffinity", "IOSchedulingClass", "IOSchedulingPriority",
          "LimitCPU", "LimitFSIZE", "LimitDATA", "LimitSTACK", "LimitCORE", "LimitRSS",
          "LimitNOFILE", "LimitAS", "LimitNPROC", "LimitMEMLOCK", "LimitLOCKS", "LimitSIGPENDING",
          "LimitMSGQUEUE", "LimitNICE", "LimitRTPRIO", "LimitRTTIME", "StandardInput",
          "StandardOutput", "StandardError", "StandardInputText", "StandardInputData",
          "SyslogIdentifier", "SyslogFacility", "SyslogLevel", "LogLevelMax", "LogExtraFields",
          "TTYPath", "Capabilities", "CapabilityBoundingSet", "AmbientCapabilities", "SecureBits",
          "ReadWritePaths", "ReadOnlyPaths", "InaccessiblePaths", "ExecPaths", "NoExecPaths",
          "TemporaryFileSystem", "BindPaths", "BindReadOnlyPaths", "ProtectHome", "ProtectSystem",
          "ProtectProc", "ProcSubset", "RuntimeDirectory", "StateDirectory", "CacheDirectory",
          "LogsDirectory", "ConfigurationDirectory", "RuntimeDirectoryMode", "StateDirectoryMode",
          "CacheDirectoryMode", "LogsDirectoryMode", "ConfigurationDirectoryMode",
          "RuntimeDirectoryPreserve", "SystemCallFilter", "SystemCallArchitectures",
          "SystemCallErrorNumber", "RestrictAddressFamilies", "RestrictNamespaces", "DevicePolicy",
          "DeviceAllow", "LoadCredential", "SetCredential", "KeyringMode", "Personality",
          "NetworkNamespacePath", "IPCNamespacePath", "SELinuxContext", "AppArmorProfile",
          "SmackProcessLabel",
          // resource control
          "CPUWeight", "StartupCPUWeight", "CPUQuota", "CPUQuotaPeriodSec", "AllowedCPUs",
          "MemoryMin", "MemoryLow", "MemoryHigh", "MemoryMax", "MemorySwapMax", "TasksMax",
          "IOWeight", "IODeviceWeight", "IOReadBandwidthMax", "IOWriteBandwidthMax",
          "IPAddressAllow", "IPAddressDeny", "Slice", "Delegate", "ManagedOOMSwap",
          "ManagedOOMMemoryPressure",
          // kill
          "KillSignal", "RestartKillSignal", "FinalKillSignal", "WatchdogSignal"})
      t[k] = {};
    for (std::string_view k : {"RemainAfterExit",
                               "GuessMainPID",
                               "PermissionsStartOnly",
                               "RootDirectoryStartOnly",
                               "NonBlocking",
                               "PrivateTmp",
                               "PrivateDevices",
                               "PrivateNetwork",
                               "PrivateIPC",
                               "PrivateUsers",
                               "PrivateMounts",
                               "NoNewPrivileges",
                               "ProtectKernelTunables",
                               "ProtectKernelModules",
                               "ProtectKernelLogs",
                               "ProtectClock",
                               "ProtectControlGroups",
                               "ProtectHostname",
                               "LockPersonality",
                               "MemoryDenyWriteExecute",
                               "RestrictRealtime",
                               "RestrictSUIDSGID",
                               "RemoveIPC",
                               "MountAPIVFS",
                               "IgnoreSIGPIPE",
                               "SendSIGKILL",
                               "SendSIGHUP",
                               "CPUAccounting",
                               "MemoryAccounting",
                               "IOAccounting",
                               "TasksAccounting",
                               "IPAccounting",
                               "DefaultDependencies",
                               "StopWhenUnneeded",
                               "RefuseManualStart",
                               "RefuseManualStop",
                               "AllowIsolate",
                               "IgnoreOnIsolate"})
      t[k] = {Value::Boolean, {}};
    for (std::string_view k :
         {"RestartSec", "TimeoutStartSec", "TimeoutStopSec", "TimeoutAbortSec", "TimeoutSec",
          "RuntimeMaxSec", "RuntimeRandomizedExtraSec", "WatchdogSec", "StartLimitIntervalSec",
          "JobTimeoutSec", "JobRunningTimeoutSec", "TimerSlackNSec"})
      t[k] = {Value::TimeSpan, {}};
    t["Restart"] = {
        Value::OneOf,
        {"no", "on-success", "on-failure", "on-abnormal", "on-watchdog", "on-abort", "always"}};
    t["Type"] = {
        Value::OneOf,
        {"simple", "exec", "forking", "oneshot", "dbus", "notify", "notify-reload", "idle"}};
    t["NotifyAccess"] = {Value::OneOf, {"none", "main", "exec", "all"}};
    t["KillMode"] = {Value::OneOf, {"control-group", "mixed", "process", "none"}};
    t["ExitType"] = {Value::OneOf, {"main", "cgroup"}};
    t["TimeoutStartFailureMode"] = {Value::OneOf, {"terminate", "abort", "kill"}};
    t["TimeoutStopFailureMode"] = {Value::OneOf, {"terminate", "abort", "kill"}};
    return t;
  }();
  return table;
}

bool isBoolean(std::string_view v) {
  static constexpr std::array<std::string_view, 8> words = {"yes", "no",  "true", "false",
                                                            "on",  "off", "1",    "0"};
  return std::find(words.begin(), words.end(), v) != words.end();
}

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string suggestion(std::string_view key) {
  std::string_view best;
  size_t bestDistance = 3;  // at most two edits away
  for (const auto& [known, rule] : rules()) {
    const size_t d = editDistance(key, known);
    if (d < bestDistance) bestDistance = d, best = known;
  }
  return best.empty() ? std::string() : fmt::format("; did you mean '{}'?", best);
}

}  // namespace

bool validTimeSpan(std::string_view text) {
  return parseTimeSpanUs(text).has_value();
}

std::optional<std::string> unitKeyProblem(std::string_view key, const UnitValue& values,
                                          const std::string& subject) {
  const auto it = rules().find(key);
  if (it == rules().end())
    return fmt::format(
        "unknown unit key '{}' in {}{} (the keys are systemd's: systemd.service(5), "
        "systemd.exec(5))",
        key, subject, suggestion(key));
  const KeyRule& rule = it->second;
  for (const auto& v : values) {
    switch (rule.value) {
      case Value::Any:
        break;
      case Value::Boolean:
        if (!isBoolean(v))
          return fmt::format("unit.{} = '{}' in {} is not a boolean; write \"yes\" or \"no\"", key,
                             shown(v), subject);
        break;
      case Value::TimeSpan:
        if (!validTimeSpan(v))
          return fmt::format(
              "unit.{} = '{}' in {} is not a duration; write e.g. \"90\", \"1min 30s\", "
              "\"500ms\" or \"infinity\"",
              key, shown(v), subject);
        break;
      case Value::OneOf:
        if (std::find(rule.choices.begin(), rule.choices.end(), v) == rule.choices.end())
          return fmt::format("unit.{} = '{}' in {} is not one of: {}", key, shown(v), subject,
                             fmt::join(rule.choices, ", "));
        break;
    }
  }
  return std::nullopt;
}

}  // namespace mesh::decl
