// Reading a file whole, for the tests and the benchmarks alike (header-only, included by
// relative path).
#pragma once

#include <fstream>
#include <iterator>
#include <string>

namespace mesh::test {

// The bytes of the file at `path`; empty when it cannot be read (it is missing, say).
inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace mesh::test
