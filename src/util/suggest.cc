#include "util/suggest.hh"

#include <algorithm>
#include <cctype>

namespace mesh {

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string nearest(std::string_view word, const std::vector<std::string>& candidates,
                    size_t maxEdits) {
  const std::string* best = nullptr;
  size_t bestDistance = maxEdits + 1;
  for (const auto& c : candidates) {
    const size_t d = editDistance(word, c);
    if (d < bestDistance) bestDistance = d, best = &c;
  }
  return best ? *best : std::string();
}

}  // namespace mesh
