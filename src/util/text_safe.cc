#include "util/text_safe.hh"

#include <fmt/format.h>

#include <cstdint>

namespace mesh {

namespace {

// The length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF) and its code point; 0 when the byte there does
// not start one.
size_t sequenceAt(std::string_view s, size_t i, uint32_t& cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  size_t n;
  uint32_t min;
  if ((c & 0xe0) == 0xc0) {
    n = 2, cp = c & 0x1f, min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3, cp = c & 0x0f, min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// Characters that reorder text or break lines where a terminal or an editor would
// not show it: the bidi embeddings, overrides, isolates and marks, and U+2028/9.
bool isLayoutControl(uint32_t cp) {
  return cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

std::string shown(std::string_view s, bool keepLines) {
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t n = sequenceAt(s, i, cp);
    if (n == 0) {  // not UTF-8: the byte itself, escaped
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    if (n == 1) {
      const char c = s[i];
      if (cp >= 0x20 && cp != 0x7f)
        out += c;
      else if (c == '\n')
        out += keepLines ? "\n" : "\\n";
      else if (c == '\t')
        out += keepLines ? "\t" : "\\t";
      else if (c == '\r')
        out += "\\r";
      else if (c == '\x1b')
        out += "\\e";
      else
        out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else if (cp >= 0x80 && cp <= 0x9f) {  // C1, as its two bytes
      out += fmt::format("\\xc2\\x{:02x}", static_cast<unsigned>(cp));
    } else if (isLayoutControl(cp)) {
      out += fmt::format("\\u{{{:04x}}}", static_cast<unsigned>(cp));
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

// jsonData's text with DEL and the C1 controls escaped. The text is valid UTF-8 (the
// writer replaced what was not) and bytes above 0x7f only occur inside strings.
std::string escapeControls(std::string text) {
  size_t at = 0;
  for (; at < text.size(); ++at) {
    const auto c = static_cast<unsigned char>(text[at]);
    if (c == 0x7f ||
        (c == 0xc2 && at + 1 < text.size() && static_cast<unsigned char>(text[at + 1]) <= 0x9f))
      break;
  }
  if (at == text.size()) return text;
  std::string out = text.substr(0, at);
  out.reserve(text.size() + 16);
  for (size_t i = at; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0x7f) {
      out += "\\u007f";
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[i + 1]));
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

std::string jsonData(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string jsonData(const nlohmann::ordered_json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string jsonOut(const nlohmann::json& j, int indent) {
  return escapeControls(jsonData(j, indent));
}

std::string jsonOut(const nlohmann::ordered_json& j, int indent) {
  return escapeControls(jsonData(j, indent));
}

std::string jsonString(std::string_view s) {
  return jsonOut(nlohmann::json(std::string(s)));
}

std::string validUtf8(std::string_view s) {
  uint32_t cp = 0;
  bool valid = true;
  for (size_t i = 0, n = 0; i < s.size() && valid; i += n) valid = (n = sequenceAt(s, i, cp)) > 0;
  if (valid) return std::string(s);
  // Through the writer itself, so that the replacement is exactly the JSON writers'.
  return nlohmann::json::parse(jsonData(nlohmann::json(std::string(s)))).get<std::string>();
}

bool plainText(std::string_view s) {
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) return false;
  }
  return true;
}

std::string shownText(std::string_view s) {
  return plainText(s) ? std::string(s) : shown(s, false);
}

std::string shownLines(std::string_view s) {
  return plainText(s) ? std::string(s) : shown(s, true);
}

}  // namespace mesh
