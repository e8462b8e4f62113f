// Golden files for a command's text output (header-only, included by relative path):
// the output, with what varies from run to run normalised, must equal
// tests/golden/<name>.txt byte for byte, so a change of output is a reviewed diff.
//
//   EXPECT_TRUE(test::matchesGolden("apply", r.out, {test::Replace{work, "<work>"}}));
//
// MESH_GOLDEN_ACCEPT=1 (`MESH_GOLDEN_ACCEPT=1 ctest -R Golden`) writes the output
// to the file instead, and the test passes: commit the files that changed. Without
// it a mismatch fails with a unified diff (`diff -u golden actual`). The target
// defines MESH_GOLDEN_DIR as the source tree's tests/golden.
#pragma once

#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "files.hh"

#ifndef MESH_GOLDEN_DIR
#error "a target using golden.hh defines MESH_GOLDEN_DIR (the source tree's tests/golden)"
#endif

namespace mesh::test {

// One normalisation: every match of `pattern` becomes `with`. A literal (a temp
// path) is a pattern that matches only itself.
struct Replace {
  Replace(std::string literal, std::string with)
      : pattern(std::regex_replace(literal, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)")),
        with(std::move(with)) {}
  Replace(std::regex pattern, std::string with)
      : pattern(std::move(pattern)), with(std::move(with)) {}
  std::regex pattern;
  std::string with;
};

// What varies in every run of mesh-host's text output, and only that: a time of day
// (RFC 3339, UTC, "2026-12-02T00:52:59Z") and a duration in milliseconds ("8 ms").
inline std::vector<Replace> timesAndDurations() {
  return {Replace(std::regex(R"(\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"), "<time>"),
          Replace(std::regex(R"(\b\d+ ms\b)"), "<n> ms")};
}

// `text` with timesAndDurations() and then `more` normalised, in that order.
inline std::string normalised(std::string text, const std::vector<Replace>& more = {}) {
  for (const auto& r : timesAndDurations()) text = std::regex_replace(text, r.pattern, r.with);
  for (const auto& r : more) text = std::regex_replace(text, r.pattern, r.with);
  return text;
}

inline bool goldenAccept() {
  const char* v = ::getenv("MESH_GOLDEN_ACCEPT");
  return v && std::strcmp(v, "1") == 0;
}

// `diff -u` of the golden file and `actual`, for a failure message.
inline std::string goldenDiff(const std::string& golden, const std::string& actual) {
  char tmpl[] = "/tmp/mesh-golden-actual.XXXXXX";
  const int fd = ::mkstemp(tmpl);
  if (fd < 0) return "(cannot make a temp file for the diff)";
  ::close(fd);
  std::ofstream(tmpl, std::ios::binary | std::ios::trunc) << actual;
  const std::string cmd =
      "diff -u --label '" + golden + "' --label actual '" + golden + "' '" + tmpl + "' 2>&1";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = ::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    ::pclose(p);
  }
  ::unlink(tmpl);
  return out;
}

// Whether `output`, normalised (normalised()), is tests/golden/<name>.txt; with
// MESH_GOLDEN_ACCEPT=1, writes it there instead.
inline ::testing::AssertionResult matchesGolden(const std::string& name, const std::string& output,
                                                const std::vector<Replace>& more = {}) {
  const std::string path = std::string(MESH_GOLDEN_DIR) + "/" + name + ".txt";
  const std::string actual = normalised(output, more);
  if (goldenAccept()) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << actual;
    if (!out.flush()) return ::testing::AssertionFailure() << "cannot write " << path;
    return ::testing::AssertionSuccess() << "accepted " << path;
  }
  if (::access(path.c_str(), R_OK) != 0)
    return ::testing::AssertionFailure()
           << path << " does not exist; run the test with MESH_GOLDEN_ACCEPT=1 to write it, "
           << "then review and commit it. The output:\n"
           << actual;
  if (slurp(path) == actual) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "the output differs from " << path
         << " (if the change is meant, rerun with MESH_GOLDEN_ACCEPT=1 and commit the file):\n"
         << goldenDiff(path, actual);
}

}  // namespace mesh::test
