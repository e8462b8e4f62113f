// Path rules for bundle entries, kept apart from I/O so they test on plain strings.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace mesh::bundle {

// An entry name in its one normal form ("a/b", no "./", no "//", no trailing
// '/'; "" is the root itself), or why the name is refused.
struct BadName {
  std::string why;
};
std::variant<std::string, BadName> normaliseEntryName(std::string_view name);

bool isValidUtf8(std::string_view s);

// Splits a '/'-separated path into its components, dropping empty ones.
std::vector<std::string_view> splitPath(std::string_view path);

// The parent of a normal entry path ("" for a top-level one) and its last component.
std::string_view parentPath(std::string_view path);
std::string_view lastComponent(std::string_view path);

}  // namespace mesh::bundle
