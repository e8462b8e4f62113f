// How deep a JSON text nests, found without parsing it: nlohmann's parser is iterative,
// but copying or dumping a value recurses once per level, so a value from etcd of
// 300,000 nested arrays (600 KB) overflows the stack where it is re-serialised (a
// signature check) or copied. Decoders of untrusted JSON refuse such text first.
#pragma once

#include <cstddef>
#include <string_view>

namespace mesh {

// Deeper than any value mesh-host writes (4 levels) by far.
inline constexpr int kMaxJsonDepth = 64;

// Whether `text` opens more than `limit` arrays and objects inside one another
// (brackets inside strings do not count). Not a syntax check: the parser does that.
inline bool jsonNestsDeeperThan(std::string_view text, int limit = kMaxJsonDepth) {
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

}  // namespace mesh
