// The tests' own file reader (tests/support/files.hh).
#include "../../support/files.hh"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace mesh::test {
namespace {

TEST(Slurp, ReadsAFileWhole) {
  char tmpl[] = "/tmp/mesh-slurp.XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string bytes("a\0b\nc", 5);
  std::ofstream(dir + "/f", std::ios::binary) << bytes;
  EXPECT_EQ(slurp(dir + "/f"), bytes);
  EXPECT_EQ(slurp(dir + "/missing"), "");
  std::filesystem::remove_all(dir);
}

// Regression: a read that fails (EISDIR here; ESRCH for /proc/<pid>/stat of a process
// that ended, which a fixture's TearDown met) threw "basic_filebuf::underflow error
// reading the file" out of the reader.
TEST(Slurp, AReadThatFailsIsEmptyNotAnException) {
  std::string got = "not read";
  EXPECT_NO_THROW(got = slurp("/"));
  EXPECT_EQ(got, "");
}

}  // namespace
}  // namespace mesh::test
