// Starting the service's process, as the supervisor does it: its own process
// group, a clean environment built from the unit, the unit's user and groups
// and working directory, stdin /dev/null, stdout+stderr to `outputFd`.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "supervise/builtin/unit_config.hh"

namespace mesh::supervise::builtin {

// The environment the service gets: PATH (and NOTIFY_SOCKET when
// `notifySocket` is not empty), then USER/LOGNAME/HOME/SHELL when User= is set,
// then Environment=, then EnvironmentFile= (which overrides, as in systemd).
// Throws mesh::Error when a required EnvironmentFile is missing.
std::map<std::string, std::string> serviceEnvironment(const ServiceConfig& c,
                                                      const std::string& notifySocket = "");

// Forks and execs the service. Returns its pid once exec succeeded; throws
// mesh::Error with the reason ("cannot execute /x: No such file or directory",
// "cannot change to directory /srv: …", "no such user: bob") when anything
// before or during exec failed — learnt over a close-on-exec pipe, no guessing.
// The uid and gid a User= service runs as; nullopt without User=. Throws
// mesh::Error for an unknown user.
std::optional<std::pair<uid_t, gid_t>> serviceUser(const ServiceConfig& c);

pid_t spawnService(const ServiceConfig& c, int outputFd, const std::string& notifySocket = "");

}  // namespace mesh::supervise::builtin
