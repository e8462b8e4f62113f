// Unified diffs for plan output, made in process (no shell, no temp files): the
// same lines `diff -u` prints, with the same algorithm (Myers' O(ND) difference
// algorithm, then diff's sliding of change groups).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mesh::apply {

// A unified diff, with 3 lines of context, from `oldContent` (nullopt: no file,
// labelled /dev/null) to `newContent`, labelled a<label> and b<label> with the
// declared path — what `diff -u --label … --label …` prints; "" when they are
// equal. Binary content, content over 1 MiB, and content whose diff would cost
// too much to compute (thousands of lines, most of them changed) are summarised
// in one line instead.
std::string unifiedDiff(std::optional<std::string_view> oldContent, std::string_view newContent,
                        const std::string& label);

}  // namespace mesh::apply
