// Unified diffs for plan output, made by diff(1).
#pragma once

#include <string>
#include <string_view>

namespace mesh::apply {

// A unified diff from the file at `oldPath` ("" means no file) to `newContent`,
// labelled with the declared path. Binary or very large content is summarised.
std::string unifiedDiff(const std::string& oldPath, std::string_view newContent,
                        const std::string& label);

}  // namespace mesh::apply
