#include "decl/toml_lex.hh"

#include <utility>

namespace mesh::decl {

namespace {

bool tripleAt(std::string_view t, size_t i, char q) {
  return i + 2 < t.size() && t[i] == q && t[i + 1] == q && t[i + 2] == q;
}

// The code point of the UTF-8 sequence at `i` (a lead byte >= 0x80) and its length;
// 0 and 1 when it is not a valid, shortest-form sequence.
std::pair<char32_t, size_t> decodeAt(std::string_view t, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(t[k]); };
  const unsigned char lead = b(i);
  int extra = 0;
  char32_t cp = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    extra = 1;
    cp = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    extra = 2;
    cp = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    extra = 3;
    cp = lead & 0x07;
  } else {
    return {0, 1};
  }
  if (i + extra >= t.size()) return {0, 1};
  for (int k = 1; k <= extra; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return {0, 1};
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  const char32_t least = extra == 1 ? 0x80 : extra == 2 ? 0x800 : 0x10000;
  if (cp < least || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0, 1};
  return {cp, static_cast<size_t>(extra) + 1};
}

}  // namespace

size_t endOfTomlString(std::string_view t, size_t i) {
  const char q = t[i];
  const bool multi = tripleAt(t, i, q);
  i += multi ? 3 : 1;
  while (i < t.size()) {
    const char c = t[i];
    if (c == '\\' && q == '"') {
      i += 2;
    } else if (c == q) {
      if (!multi) return i + 1;
      if (tripleAt(t, i, q)) {
        i += 3;
        while (i < t.size() && t[i] == q) ++i;  // """"" ends with quotes in it
        return i;
      }
      ++i;
    } else if (c == '\n' && !multi) {
      return i;
    } else {
      ++i;
    }
  }
  return t.size();
}

std::optional<NotAscii> notAsciiOutsideStrings(std::string_view t) {
  size_t i = 0;
  size_t lineStart = 0;
  int line = 1;
  // Counts the lines passed between `from` and `to`.
  const auto pass = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < t.size(); ++k) {
      if (t[k] == '\n') {
        ++line;
        lineStart = k + 1;
      }
    }
  };
  while (i < t.size()) {
    const char c = t[i];
    if (c == '"' || c == '\'') {
      const size_t end = endOfTomlString(t, i);
      pass(i, end);
      i = end;
    } else if (c == '#') {
      while (i < t.size() && t[i] != '\n') ++i;
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      const auto [cp, length] = decodeAt(t, i);
      return NotAscii{line, static_cast<int>(i - lineStart) + 1, cp, t.substr(i, length)};
    } else {
      if (c == '\n') {
        ++line;
        lineStart = i + 1;
      }
      ++i;
    }
  }
  return std::nullopt;
}

}  // namespace mesh::decl
