// "Did you mean …?": the known word nearest a mistyped one, for the messages that
// refuse a word (a unit key, a command, an option).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace mesh {

// Edits (insert, delete, substitute; letters compared without case) from `a` to `b`.
[[nodiscard]] size_t editDistance(std::string_view a, std::string_view b);

// The candidate fewest edits from `word`, at most `maxEdits` (the first of equals);
// "" none that near.
[[nodiscard]] std::string nearest(std::string_view word, const std::vector<std::string>& candidates,
                                  size_t maxEdits = 2);

}  // namespace mesh
