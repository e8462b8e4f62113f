// A fresh directory under /tmp for one test (header-only, included by relative path).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace mesh::test {

// /tmp/<prefix>.XXXXXX, made when constructed and removed with all it holds when
// destroyed, also after a failed assertion. As a fixture member it stands for SetUp's
// mkdtemp and TearDown's remove_all:
//
//   test::TempDir tmp{"mesh-fs-test"};
//   std::string dir = tmp.path;
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "mesh-test") {
    std::string tmpl = "/tmp/" + prefix + ".XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
    path = tmpl;
  }
  ~TempDir() {
    namespace fs = std::filesystem;
    std::error_code ec;
    // A test may leave unsearchable directories behind: make each one removable first.
    for (auto it = fs::recursive_directory_iterator(path, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec) && !it->is_symlink(ec))
        fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    }
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string path;
};

}  // namespace mesh::test
