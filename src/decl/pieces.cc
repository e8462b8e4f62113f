#include "decl/pieces.hh"

#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "decl/toml_lex.hh"

namespace mesh::decl {

namespace {

// The plain header at `at`: "[module.<bare>.<bare>.<bare>]" at a line's start, then only spaces,
// tabs or a comment to the line's end. Returns what is between the brackets; empty: not plain.
std::string_view plainHeader(std::string_view text, size_t at) {
  constexpr std::string_view lead = "[module.";
  // At the line's start, so that its columns are those of the whole text.
  if ((at > 0 && text[at - 1] != '\n') || text.substr(at, lead.size()) != lead) return {};
  size_t i = at + lead.size();
  for (int part = 0; part < 3; ++part) {
    const size_t start = i;
    while (i < text.size() && isBareKeyChar(text[i])) ++i;
    if (i == start || i >= text.size()) return {};
    if (part < 2 && text[i++] != '.') return {};
  }
  if (text[i] != ']') return {};
  const std::string_view inside = text.substr(at + 1, i - at - 1);
  for (++i; i < text.size() && (text[i] == ' ' || text[i] == '\t');) ++i;
  if (i < text.size() && text[i] != '#' && text[i] != '\n' &&
      text.substr(i, 2) != std::string_view("\r\n"))
    return {};
  return inside;
}

}  // namespace

std::optional<Pieces> resourcePieces(std::string_view text, const std::vector<size_t>& headers) {
  Pieces out;
  out.top = {0, headers.empty() ? text.size() : headers.front(), 1};
  out.resources.reserve(headers.size());
  std::unordered_set<std::string_view> seen;
  seen.reserve(headers.size());
  int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + out.top.end, '\n'));
  for (size_t k = 0; k < headers.size(); ++k) {
    const size_t begin = headers[k];
    const size_t end = k + 1 < headers.size() ? headers[k + 1] : text.size();
    const std::string_view header = plainHeader(text, begin);
    // A header once more is toml++'s to refuse ("redefinition"), in its words.
    if (header.empty() || !seen.insert(header).second) return std::nullopt;
    out.resources.push_back({begin, end, line});
    line += static_cast<int>(std::count(text.begin() + begin, text.begin() + end, '\n'));
  }
  return out;
}

}  // namespace mesh::decl
