// How deep a TOML text nests, found before toml++ sees it: toml++ recurses once per
// level of tables it builds (a dotted key or a table header of 50,000 segments, about
// 100 KB, overflows the stack), and caps only arrays and inline tables. The scan is a
// loop, never recursive, over the text's keys, headers, arrays and inline tables; it
// skips strings and comments and does not judge the syntax (toml++ does that next).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace mesh::decl {

// A declaration needs 6 levels ([module.<m>.<kind>.<name>] and a table in it); this
// leaves room for any honest one.
inline constexpr int kMaxNesting = 64;

struct TooDeep {
  int line = 1;  // where the nesting first passes the limit (1-based)
  int column = 1;
  int depth = 0;  // how deep it is there
};

// The first place where `text` nests deeper than `limit`: table header segments,
// dotted key segments, arrays and inline tables counted together. nullopt: it does not.
// With `headers`, the offset of each table header's first '[' is appended to it, up to
// where the scan stopped (the end of the text when nothing nests too deep).
[[nodiscard]] std::optional<TooDeep> tooDeep(std::string_view text, int limit = kMaxNesting,
                                             std::vector<size_t>* headers = nullptr);

}  // namespace mesh::decl
