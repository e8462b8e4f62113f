// Reading a file whole, for the tests and the benchmarks alike (header-only, included by
// relative path).
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace mesh::test {

// The bytes of the file at `path`; empty when it cannot be read (it is missing, say), and
// what was read when a read fails part way. Never throws: fixtures read /proc/<pid>/… of
// processes that may end meanwhile (the read then fails with ESRCH), and libstdc++'s
// istreambuf_iterator would throw that out of a TearDown; a stream insertion of the
// buffer stops instead.
inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return std::move(out).str();
}

}  // namespace mesh::test
