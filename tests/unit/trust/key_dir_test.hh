// Shared fixture for the tests of key and signature files: a temp dir to write them
// into, with libsodium initialised.
#pragma once

#include <gtest/gtest.h>
#include <sodium.h>
#include <sys/stat.h>

#include <fstream>
#include <functional>
#include <string>

#include "../../support/temp_dir.hh"
#include "util/error.hh"

namespace mesh::trust {

class KeyDirTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_GE(sodium_init(), 0); }

  // Writes `text` to <dir>/<name> with exactly `mode`, whatever the umask; its path.
  std::string write(const std::string& name, const std::string& text, mode_t mode = 0644) {
    const auto path = dir + "/" + name;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    EXPECT_EQ(::chmod(path.c_str(), mode), 0) << path;
    return path;
  }

  // The message of the E that `f` throws; a failure of the test when it throws none.
  template <typename E = InputError>
  std::string errorOf(const std::function<void()>& f) {
    try {
      f();
    } catch (const E& e) {
      return e.what();
    }
    ADD_FAILURE() << "expected an exception";
    return {};
  }

  mesh::test::TempDir tmp{"mesh-keys"};
  std::string dir = tmp.path;
};

}  // namespace mesh::trust
