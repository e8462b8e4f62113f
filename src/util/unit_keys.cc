#include "util/unit_keys.hh"

#include <array>
#include <initializer_list>

namespace mesh {

namespace {

constexpr std::array<std::string_view, 7> kRestart = {
    "no", "on-success", "on-failure", "on-abnormal", "on-watchdog", "on-abort", "always"};
// No watchdog in the built-in supervisor: on-watchdog would never restart.
constexpr std::array<std::string_view, 6> kBuiltinRestart = {
    "no", "on-success", "on-failure", "on-abnormal", "on-abort", "always"};
constexpr std::array<std::string_view, 8> kType = {"simple", "exec",   "forking",       "oneshot",
                                                   "dbus",   "notify", "notify-reload", "idle"};
constexpr std::array<std::string_view, 3> kBuiltinType = {"simple", "exec", "notify"};
constexpr std::array<std::string_view, 4> kNotifyAccess = {"none", "main", "exec", "all"};
constexpr std::array<std::string_view, 4> kKillMode = {"control-group", "mixed", "process", "none"};
constexpr std::array<std::string_view, 2> kExitType = {"main", "cgroup"};
constexpr std::array<std::string_view, 3> kFailureMode = {"terminate", "abort", "kill"};

using Table = std::map<std::string_view, UnitKey, std::less<>>;

void add(Table& t, UnitSection section, UnitKeyValue value,
         std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) t[name] = UnitKey{.section = section, .value = value};
}

// systemd.unit(5) [Unit]/[Install], systemd.service(5), systemd.exec(5),
// systemd.kill(5) and systemd.resource-control(5), as of systemd 252.
Table build() {
  using S = UnitSection;
  using V = UnitKeyValue;
  Table t;
  add(t, S::Unit, V::Any,
      {"Description",
       "Documentation",
       "Wants",
       "Requires",
       "Requisite",
       "BindsTo",
       "PartOf",
       "Upholds",
       "Conflicts",
       "Before",
       "After",
       "OnFailure",
       "OnSuccess",
       "PropagatesReloadTo",
       "ReloadPropagatedFrom",
       "JoinsNamespaceOf",
       "RequiresMountsFor",
       "OnFailureJobMode",
       "StartLimitBurst",
       "StartLimitAction",
       "RebootArgument",
       "ConditionPathExists",
       "ConditionPathIsDirectory",
       "ConditionFileNotEmpty",
       "ConditionUser",
       "ConditionHost",
       "AssertPathExists",
       "SourcePath"});
  add(t, S::Unit, V::Boolean,
      {"DefaultDependencies", "StopWhenUnneeded", "RefuseManualStart", "RefuseManualStop",
       "AllowIsolate", "IgnoreOnIsolate"});
  add(t, S::Unit, V::TimeSpan, {"StartLimitIntervalSec", "JobTimeoutSec", "JobRunningTimeoutSec"});
  add(t, S::Install, V::Any, {"WantedBy", "RequiredBy", "Alias", "Also", "DefaultInstance"});
  add(t, S::Service, V::Any,
      {// service
       "PIDFile", "BusName", "ExecStart", "ExecStartPre", "ExecStartPost", "ExecCondition",
       "ExecReload", "ExecStop", "ExecStopPost", "RestartPreventExitStatus",
       "RestartForceExitStatus", "SuccessExitStatus", "FileDescriptorStoreMax", "USBFunction",
       "Sockets", "OOMPolicy", "ReloadSignal",
       // exec
       "WorkingDirectory", "RootDirectory", "RootImage", "User", "Group", "DynamicUser",
       "SupplementaryGroups", "PAMName", "Environment", "EnvironmentFile", "PassEnvironment",
       "UnsetEnvironment", "UMask", "Nice", "OOMScoreAdjust", "CPUSchedulingPolicy",
       "CPUSchedulingPriority", "CPUAffinity", "IOSchedulingClass", "IOSchedulingPriority",
       "LimitCPU", "LimitFSIZE", "LimitDATA", "LimitSTACK", "LimitCORE", "LimitRSS", "LimitNOFILE",
       "LimitAS", "LimitNPROC", "LimitMEMLOCK", "LimitLOCKS", "LimitSIGPENDING", "LimitMSGQUEUE",
       "LimitNICE", "LimitRTPRIO", "LimitRTTIME", "StandardInput", "StandardOutput",
       "StandardError", "StandardInputText", "StandardInputData", "SyslogIdentifier",
       "SyslogFacility", "SyslogLevel", "LogLevelMax", "LogExtraFields", "TTYPath", "Capabilities",
       "CapabilityBoundingSet", "AmbientCapabilities", "SecureBits", "ReadWritePaths",
       "ReadOnlyPaths", "InaccessiblePaths", "ExecPaths", "NoExecPaths", "TemporaryFileSystem",
       "BindPaths", "BindReadOnlyPaths", "ProtectHome", "ProtectSystem", "ProtectProc",
       "ProcSubset", "RuntimeDirectory", "StateDirectory", "CacheDirectory", "LogsDirectory",
       "ConfigurationDirectory", "RuntimeDirectoryMode", "StateDirectoryMode", "CacheDirectoryMode",
       "LogsDirectoryMode", "ConfigurationDirectoryMode", "RuntimeDirectoryPreserve",
       "SystemCallFilter", "SystemCallArchitectures", "SystemCallErrorNumber",
       "RestrictAddressFamilies", "RestrictNamespaces", "DevicePolicy", "DeviceAllow",
       "LoadCredential", "SetCredential", "KeyringMode", "Personality", "NetworkNamespacePath",
       "IPCNamespacePath", "SELinuxContext", "AppArmorProfile", "SmackProcessLabel",
       // resource control
       "CPUWeight", "StartupCPUWeight", "CPUQuota", "CPUQuotaPeriodSec", "AllowedCPUs", "MemoryMin",
       "MemoryLow", "MemoryHigh", "MemoryMax", "MemorySwapMax", "TasksMax", "IOWeight",
       "IODeviceWeight", "IOReadBandwidthMax", "IOWriteBandwidthMax", "IPAddressAllow",
       "IPAddressDeny", "Slice", "Delegate", "ManagedOOMSwap", "ManagedOOMMemoryPressure",
       // kill
       "KillSignal", "RestartKillSignal", "FinalKillSignal", "WatchdogSignal"});
  add(t, S::Service, V::Boolean,
      {"RemainAfterExit",
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
       "IPAccounting"});
  add(t, S::Service, V::TimeSpan,
      {"RestartSec", "TimeoutStartSec", "TimeoutStopSec", "TimeoutAbortSec", "TimeoutSec",
       "RuntimeMaxSec", "RuntimeRandomizedExtraSec", "WatchdogSec", "TimerSlackNSec"});
  auto oneOf = [&](std::string_view name, std::span<const std::string_view> choices) {
    t[name] = UnitKey{.section = S::Service, .value = V::OneOf, .choices = choices};
  };
  oneOf("Restart", kRestart);
  oneOf("Type", kType);
  oneOf("NotifyAccess", kNotifyAccess);
  oneOf("KillMode", kKillMode);
  oneOf("ExitType", kExitType);
  oneOf("TimeoutStartFailureMode", kFailureMode);
  oneOf("TimeoutStopFailureMode", kFailureMode);

  // The built-in supervisor's own: the log's rotation size (systemd ignores X- keys).
  t["X-LogMaxBytes"] = UnitKey{.section = S::Service, .value = V::Bytes};
  // What the built-in supervisor parses (supervise/builtin/unit_config.cc).
  for (std::string_view name :
       {"ExecStart", "Environment", "EnvironmentFile", "WorkingDirectory", "User", "Group",
        "Restart", "RestartSec", "TimeoutStopSec", "TimeoutStartSec", "Type", "NotifyAccess",
        "X-LogMaxBytes", "ExecReload"})
    t.at(name).builtinHonours = true;
  t.at("Restart").builtinChoices = kBuiltinRestart;
  t.at("Type").builtinChoices = kBuiltinType;
  return t;
}

}  // namespace

const std::map<std::string_view, UnitKey, std::less<>>& unitKeys() {
  static const Table table = build();
  return table;
}

const UnitKey* findUnitKey(std::string_view name) {
  const auto it = unitKeys().find(name);
  return it == unitKeys().end() ? nullptr : &it->second;
}

}  // namespace mesh
