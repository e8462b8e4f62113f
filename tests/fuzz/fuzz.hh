// mesh-fuzz: the fuzz targets over every decoder of untrusted bytes, and the small
// driver that runs them (tests/fuzz/driver.cc): each target's seed corpus, then a
// fixed number of inputs mutated from it with a fixed seed — deterministic, built
// with the project's own compiler, nothing else needed. A target returns normally
// for any input its decoder refuses cleanly (mesh::Error); anything else — a crash,
// another exception escaping, an assertion of the target's own — is a finding.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mesh::fuzz {

struct Target {
  const char* name;
  // Whether the decoder accepted the input (accepted ones are mutated further).
  bool (*run)(std::string_view input);
  // Seeds made by the encoders themselves (besides the corpus files on disk).
  std::vector<std::string> (*seeds)();
  // Tokens the mutator inserts (the format's punctuation and keywords).
  std::vector<std::string> tokens;
};

const std::vector<Target>& targets();

// A finding the target itself detects (an invariant broken): reported as a crash.
[[noreturn]] void fail(const char* what);

}  // namespace mesh::fuzz
