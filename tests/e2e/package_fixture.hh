// The packages under test: `cpack -G DEB` from this build tree (its install script
// is run, nothing is built), made once per test binary into a temp directory that
// is removed at exit. A package of another version comes from the same tree with
// CPACK_PACKAGE_VERSION overridden: what an upgrade test installs over the first.
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "harness.hh"

namespace mesh::e2e {

inline bool have(const std::string& tool) {
  return runCommand({"sh", "-c", "command -v " + tool}).code == 0;
}

inline std::string firstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// Why packages cannot be made on this machine; "" when they can.
inline std::string packagingUnavailable() {
  for (const char* tool : {"cpack", "dpkg-deb", "dpkg"})
    if (!have(tool)) return std::string(tool) + " is not installed (scripts/install-deps)";
  return "";
}

inline const std::string& packageDir() {
  struct Dir {
    std::string path;
    Dir() {
      char tmpl[] = "/tmp/mesh-package.XXXXXX";
      path = ::mkdtemp(tmpl);
    }
    ~Dir() {
      if (!std::getenv("MESH_KEEP_TEST_DIRS")) std::filesystem::remove_all(path);
    }
  };
  static Dir dir;
  return dir.path;
}

// The .deb of `version` (MESH_VERSION, this tree's, unless told), made on first use;
// "" with `why` (cpack's output) when cpack fails.
inline std::string debOf(const std::string& version, std::string* why) {
  static std::map<std::string, std::string> made;
  if (auto it = made.find(version); it != made.end()) return it->second;
  const std::string out = packageDir() + "/" + version;
  std::vector<std::string> argv = {
      "cpack", "-G", "DEB", "--config", std::string(MESH_BUILD_DIR) + "/CPackConfig.cmake",
      "-B",    out};
  if (version != MESH_VERSION) argv.insert(argv.end(), {"-D", "CPACK_PACKAGE_VERSION=" + version});
  Result r = runCommand(argv);
  const std::string arch = firstLine(runCommand({"dpkg", "--print-architecture"}).out);
  const std::string deb = fmt::format("{}/mesh-host_{}_{}.deb", out, version, arch);
  if (r.code != 0 || !std::filesystem::exists(deb)) {
    *why = fmt::format("cpack made no {} (exit {}): {}{}", deb, r.code, r.out, r.err);
    return "";
  }
  return made[version] = deb;
}

}  // namespace mesh::e2e
