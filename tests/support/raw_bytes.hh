// What no output of mesh-host may hold (issue 27; the rules in src/util/text_safe.hh): a
// byte a terminal obeys or that is not UTF-8. Used by every test that drives hostile bytes
// through an output (header-only, included by relative path).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace mesh::test {

enum class Shown {
  Json,  // a JSON text: valid UTF-8 above the controls may stay as it is (U+202E is data)
  Text,  // a terminal's or a log's text: the bidi and line-separator characters escaped too
};

// Passes when `text` holds only LF, TAB, printable ASCII and valid UTF-8 from U+00A0 up
// (for Shown::Text, none of the characters that reorder or break lines); fails naming
// the first byte that is not, where, and the text around it.
inline ::testing::AssertionResult nothingRaw(std::string_view text, Shown kind) {
  const auto fail = [&](size_t at, const char* what) {
    const size_t from = at < 40 ? 0 : at - 40;
    std::string around;
    for (const char c : text.substr(from, 80)) {
      const auto u = static_cast<unsigned char>(c);
      around += u >= 0x20 && u < 0x7f ? std::string(1, c) : "\\x" + std::to_string(u) + ";";
    }
    return ::testing::AssertionFailure()
           << what << " (byte " << int(static_cast<unsigned char>(text[at])) << ") at " << at
           << " of " << text.size() << ", around: " << around;
  };
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
      ++i;
      continue;
    }
    if (c < 0x20 || c == 0x7f) return fail(i, "a raw control byte");
    const size_t n = c >= 0xc2 && c <= 0xdf   ? 2
                     : c >= 0xe0 && c <= 0xef ? 3
                     : c >= 0xf0 && c <= 0xf4 ? 4
                                              : 0;
    if (n == 0 || i + n > text.size()) return fail(i, "invalid UTF-8");
    uint32_t cp = c & (n == 2 ? 0x1f : n == 3 ? 0x0f : 0x07);
    for (size_t k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      if ((b & 0xc0) != 0x80) return fail(i, "invalid UTF-8");
      cp = (cp << 6) | (b & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return fail(i, "invalid UTF-8");
    if (cp < 0xa0) return fail(i, "a raw C1 control");
    if (kind == Shown::Text && (cp == 0x061c || cp == 0x200e || cp == 0x200f ||
                                (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)))
      return fail(i, "a raw bidi or line-separator character");
    i += n;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace mesh::test
