// What the declaration's text is checked for before toml++ sees it, past nesting
// (depth.hh): toml++ 3.3.0 reaches undefined behaviour (TOML_UNREACHABLE in
// is_non_ascii_horizontal_whitespace) on any character from U+00A1 to U+0499 outside
// a string or comment — `café = 1`, a header `[module.ґ]`, `x = 1é` — where TOML 1.0
// allows only ASCII anyway. Such a character is refused here, with its place. Also
// the string lexing that the nesting scan shares.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace mesh::decl {

// A character of a bare key: A-Z a-z 0-9 _ -.
[[nodiscard]] constexpr bool isBareKeyChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// The index just after the string that opens at `i` with the quote `q` (a basic "…"
// with escapes, or a literal '…'; single- or multi-line, by a triple quote). A
// single-line string never closed ends at its line's end; any string at the text's.
[[nodiscard]] size_t endOfTomlString(std::string_view text, size_t i);

struct NotAscii {
  int line = 1;  // 1-based, the column counted in bytes as toml++ does
  int column = 1;
  char32_t codepoint = 0;  // 0: the bytes there are not valid UTF-8
  std::string_view bytes;  // the character's bytes in the text (its first when not UTF-8)
};

// The first character that is not ASCII outside strings and comments; nullopt: none.
[[nodiscard]] std::optional<NotAscii> notAsciiOutsideStrings(std::string_view text);

}  // namespace mesh::decl
