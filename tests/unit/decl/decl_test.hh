// Helpers shared by the declaration parser's tests: parse a string, or parse
// it expecting failure and return the error text.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "decl/parse.hh"
#include "util/error.hh"

namespace mesh::decl::test {

inline const std::string kDigestA = "sha256:" + std::string(64, 'a');
inline const std::string kDigestB = "sha256:" + std::string(64, 'b');

inline ParseOptions defaultOptions() {
  ParseOptions o;
  o.node = "laptop";
  o.baseDir = "/srv/decl";
  return o;
}

inline Declaration parse(const std::string& text, const ParseOptions& options = defaultOptions()) {
  return parseDeclaration(text, "decl.toml", options);
}

// The InputError's message; fails the test when parsing succeeds.
inline std::string errorOf(const std::string& text,
                           const ParseOptions& options = defaultOptions()) {
  try {
    (void)parseDeclaration(text, "decl.toml", options);  // only whether it throws
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an InputError for:\n" << text;
  return {};
}

inline std::vector<std::string> ids(const Declaration& d) {
  std::vector<std::string> out;
  for (const auto& r : d.resources) out.push_back(r.id);
  return out;
}

}  // namespace mesh::decl::test
