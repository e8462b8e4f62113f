// The keys a process's `unit` table may hold — systemd's [Unit], [Service] and
// [Install] directives, the exec, kill and resource-control ones included — and
// the values of those whose values are closed sets (Restart, Type, …), durations
// (RestartSec, TimeoutStartSec, …) or booleans. Checked at parse, so a typo
// (`Restrat`) or a value systemd would ignore with a warning in its journal
// (`Restart = "sometimes"`) is bad input with a position, on either backend. The
// keys and their values are those of util/unit_keys.hh, the one table.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "decl/model.hh"

namespace mesh::decl {

// nullopt when the key is known and its value fits; otherwise what is wrong and
// what to write instead ("unknown unit key 'Restrat' in process m.a; did you mean
// 'Restart'?"). `subject` names the resource.
std::optional<std::string> unitKeyProblem(std::string_view key, const UnitValue& values,
                                          const std::string& subject);

// A systemd time span ("90", "1min 30s", "500ms", "infinity").
bool validTimeSpan(std::string_view text);

}  // namespace mesh::decl
