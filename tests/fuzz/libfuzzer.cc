// The libFuzzer entry (MESH_LIBFUZZER=ON, cmake/MeshLibFuzzer.cmake): one binary per
// target, mesh-libfuzz-<target>, running the very function mesh-fuzz drives
// (targets.cc) under libFuzzer's coverage feedback, ASan and UBSan. A target returns
// for any input its decoder refuses cleanly; an exception other than mesh::Error
// escaping it is reported and aborts, which libFuzzer saves as a crash-* input.
//
// MESH_FUZZ_EXPORT=DIR mesh-libfuzz-<target>: writes the target's built-in seeds as
// DIR/seed-<n> and its tokens as the libFuzzer dictionary DIR.dict, then exits
// (bench/fuzz-coverage.sh seeds and runs each target with them).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "fuzz.hh"

#ifndef MESH_FUZZ_TARGET
#error "MESH_FUZZ_TARGET names the target (tests/fuzz/CMakeLists.txt)"
#endif

namespace mesh::fuzz {
namespace {

const Target& target() {
  static const Target* found = [] {
    for (const auto& t : targets())
      if (std::strcmp(t.name, MESH_FUZZ_TARGET) == 0) return &t;
    std::fprintf(stderr, "mesh-libfuzz: no target named %s\n", MESH_FUZZ_TARGET);
    std::abort();
  }();
  return *found;
}

// A dictionary entry: the token quoted, every byte outside printable ASCII (and the
// quote and backslash) as \xNN — libFuzzer's -dict format.
std::string dictEntry(const std::string& token) {
  std::string out = "\"";
  for (unsigned char c : token) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out + "\"";
}

void exportSeeds(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  size_t n = 0;
  for (const auto& seed : target().seeds()) {
    std::ofstream(dir / ("seed-" + std::to_string(n++)), std::ios::binary) << seed;
  }
  std::ofstream dict(dir.string() + ".dict", std::ios::binary);
  for (const auto& token : target().tokens) dict << dictEntry(token) << '\n';
  if (!dict.flush()) {
    std::fprintf(stderr, "mesh-libfuzz: cannot write %s.dict\n", dir.c_str());
    std::exit(1);
  }
}

}  // namespace
}  // namespace mesh::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("MESH_FUZZ_EXPORT")) {
    mesh::fuzz::exportSeeds(dir);
    std::exit(0);
  }
  mesh::fuzz::target();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    mesh::fuzz::target().run(input);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mesh-libfuzz: %s let an exception escape: %s\n", MESH_FUZZ_TARGET,
                 e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "mesh-libfuzz: %s let an exception of unknown type escape\n",
                 MESH_FUZZ_TARGET);
    std::abort();
  }
  return 0;
}
