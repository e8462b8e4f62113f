#include "decl/unit_keys.hh"

#include "decl/fields.hh"
#include "util/suggest.hh"
#include "util/timespan.hh"
#include "util/unit_keys.hh"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <vector>

namespace mesh::decl {

namespace {

bool isBoolean(std::string_view v) {
  static constexpr std::array<std::string_view, 8> words = {"yes", "no",  "true", "false",
                                                            "on",  "off", "1",    "0"};
  return std::find(words.begin(), words.end(), v) != words.end();
}

std::string suggestion(std::string_view key) {
  std::vector<std::string> declarable;
  for (const auto& [known, row] : unitKeys())
    if (row.declarable) declarable.emplace_back(known);
  const std::string best = nearest(key, declarable);
  return best.empty() ? std::string() : fmt::format("; did you mean '{}'?", best);
}

}  // namespace

bool validTimeSpan(std::string_view text) {
  return parseTimeSpanUs(text).has_value();
}

std::optional<std::string> unitKeyProblem(std::string_view key, const UnitValue& values,
                                          const std::string& subject) {
  const UnitKey* rule = findUnitKey(key);
  // An extension key (X-…) systemd ignores and the table does not know: taken as given.
  if (!rule && key.starts_with("X-")) return std::nullopt;
  if (!rule || !rule->declarable)
    return fmt::format(
        "unknown unit key '{}' in {}{} (the keys are systemd's: systemd.service(5), "
        "systemd.exec(5))",
        key, subject, suggestion(key));
  for (const auto& v : values) {
    switch (rule->value) {
      case UnitKeyValue::Any:
        break;
      case UnitKeyValue::Bytes:
        if (v.empty() ||
            !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
            v.size() > 18 || std::stoull(v) < 64)
          return fmt::format("unit.{} = '{}' in {} is not a number of bytes (at least 64)", key,
                             shown(v), subject);
        break;
      case UnitKeyValue::Boolean:
        if (!isBoolean(v))
          return fmt::format("unit.{} = '{}' in {} is not a boolean; write \"yes\" or \"no\"", key,
                             shown(v), subject);
        break;
      case UnitKeyValue::TimeSpan:
        if (!validTimeSpan(v))
          return fmt::format(
              "unit.{} = '{}' in {} is not a duration; write e.g. \"90\", \"1min 30s\", "
              "\"500ms\" or \"infinity\"",
              key, shown(v), subject);
        break;
      case UnitKeyValue::OneOf:
        if (std::find(rule->choices.begin(), rule->choices.end(), v) == rule->choices.end())
          return fmt::format("unit.{} = '{}' in {} is not one of: {}", key, shown(v), subject,
                             fmt::join(rule->choices, ", "));
        break;
    }
  }
  return std::nullopt;
}

}  // namespace mesh::decl
