// A declaration cut into pieces at its resource headers, so that each resource's
// table can be parsed on its own: toml++ builds the whole document before anything
// reads it, 76 MB for 100,000 files beside the text's 18 MB, while one resource's
// table is a few hundred bytes. Only the plain shape is cut — every table header a
// `[module.<module>.<kind>.<name>]` of bare keys, each once; any other text is
// parsed whole, as before, so what is accepted and what each error says is the same.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace mesh::decl {

// A span of the text: [begin, end), starting on line `line` (1-based) at column 1.
struct Piece {
  size_t begin = 0;
  size_t end = 0;
  int line = 1;
};

struct Pieces {
  Piece top;                     // before the first header: node, serial, cluster, empty
  std::vector<Piece> resources;  // from each header to the next, in the text's order
};

// The pieces of `text`, whose table headers begin at `headers` (tooDeep's, in order);
// nullopt when the text is not of the plain shape.
[[nodiscard]] std::optional<Pieces> resourcePieces(std::string_view text,
                                                   const std::vector<size_t>& headers);

}  // namespace mesh::decl
