// The one table of unit keys: systemd's [Unit], [Service] and [Install]
// directives a process's `unit` table may hold (the exec, kill and
// resource-control ones included), the values each takes, and what the built-in
// supervisor makes of it. The declaration checks keys and values against it at
// parse (decl/unit_keys.hh); the built-in supervisor honours the keys it marks and
// lists every other [Service] key as unsupported
// (supervise/builtin/unit_config.hh). A key is added here, once.
#pragma once

#include <functional>
#include <map>
#include <span>
#include <string_view>

namespace mesh {

// The section systemd reads a key from.
enum class UnitSection { Unit, Service, Install };

// What a key's values must be: anything, a boolean ("yes"/"no", …), a time span
// (util/timespan.hh), one of `choices`, or a number of bytes (at least 64).
enum class UnitKeyValue { Any, Boolean, TimeSpan, OneOf, Bytes };

struct UnitKey {
  UnitSection section = UnitSection::Service;
  UnitKeyValue value = UnitKeyValue::Any;
  std::span<const std::string_view> choices = {};  // UnitKeyValue::OneOf
  // A declaration may give the key. (Every key in the table may be declared,
  // X-LogMaxBytes — the built-in supervisor's own, which systemd ignores as it
  // ignores every X- key — included.)
  bool declarable = true;
  // The built-in supervisor parses the key (supervise/builtin/unit_config.hh);
  // every other [Service] key is unsupported there.
  bool builtinHonours = false;
  // Of a honoured key's choices, those the built-in supervisor honours; empty:
  // all of them. Any other value is unsupported ("Type=forking").
  std::span<const std::string_view> builtinChoices = {};
};

// Every key, by name (sorted, so a walk is in name order).
[[nodiscard]] const std::map<std::string_view, UnitKey, std::less<>>& unitKeys();

// The key's row, or nullptr when there is none.
[[nodiscard]] const UnitKey* findUnitKey(std::string_view name);

}  // namespace mesh
