// Plan's unified diffs (apply/diff.hh) are made in process; /usr/bin/diff -u is
// the oracle they must match byte for byte — for a table of cases, and for many
// random edits of small files — plus the summaries of binary, oversized and too
// costly content.
#include "apply/diff.hh"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include "../../support/temp_dir.hh"

namespace mesh::apply {
namespace {

namespace fs = std::filesystem;

const std::string kLabel = "/etc/app/config";

class Diff : public ::testing::Test {
 protected:
  // What `diff -u` prints for the same two contents and labels (no old file:
  // an empty one labelled /dev/null).
  std::string oracle(const std::optional<std::string>& oldContent, const std::string& newContent) {
    std::ofstream(dir + "/old", std::ios::binary | std::ios::trunc) << oldContent.value_or("");
    std::ofstream(dir + "/new", std::ios::binary | std::ios::trunc) << newContent;
    const std::string cmd = "/usr/bin/diff -u --label '" +
                            (oldContent ? "a" + kLabel : std::string("/dev/null")) +
                            "' --label 'b" + kLabel + "' '" + dir + "/old' '" + dir + "/new'";
    FILE* p = ::popen(cmd.c_str(), "r");
    EXPECT_NE(p, nullptr);
    if (!p) return {};
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int status = ::pclose(p);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) <= 1) << cmd;
    return out;
  }

  void expectLikeDiff(const std::optional<std::string>& oldContent, const std::string& newContent,
                      const std::string& what) {
    const auto want = oracle(oldContent, newContent);
    const auto got =
        unifiedDiff(oldContent ? std::optional<std::string_view>(*oldContent) : std::nullopt,
                    newContent, kLabel);
    EXPECT_EQ(got, want) << what << "\n--- old:\n"
                         << oldContent.value_or("(none)") << "\n--- new:\n"
                         << newContent;
  }

  mesh::test::TempDir tmp{"mesh-diff-test"};
  std::string dir = tmp.path;
};

// "line from\n" … "line to\n"
std::string numbered(int from, int to) {
  std::string s;
  for (int i = from; i <= to; ++i) s += "line " + std::to_string(i) + "\n";
  return s;
}

TEST_F(Diff, MatchesDiffForATableOfCases) {
  const std::string ten = numbered(1, 10);
  const std::string twenty = numbered(1, 20);
  auto replace = [](std::string s, const std::string& from, const std::string& to) {
    return s.replace(s.find(from), from.size(), to);
  };
  struct Case {
    const char* what;
    std::optional<std::string> oldContent;
    std::string newContent;
  };
  const std::vector<Case> cases = {
      {"no file → text", std::nullopt, "a\nb\nc\n"},
      {"no file → one line", std::nullopt, "only\n"},
      {"no file → empty", std::nullopt, ""},
      {"empty file → text", "", "a\nb\nc\n"},
      {"text → empty", "a\nb\nc\n", ""},
      {"one line → empty", "a\n", ""},
      {"identical", ten, ten},
      {"identical, no final newline", "a\nb", "a\nb"},
      {"change in the middle", ten, replace(ten, "line 5\n", "line five\n")},
      {"insert in the middle", ten, replace(ten, "line 5\n", "line 5\nnew\n")},
      {"delete in the middle", ten, replace(ten, "line 5\n", "")},
      {"change the first line", ten, replace(ten, "line 1\n", "first\n")},
      {"change the last line", ten, replace(ten, "line 10\n", "last\n")},
      {"insert at the start", ten, "new\n" + ten},
      {"append at the end", ten, ten + "new\n"},
      {"multiple hunks", twenty,
       replace(replace(twenty, "line 2\n", "two\n"), "line 18\n", "eighteen\n")},
      {"changes 6 lines apart share a hunk", twenty,
       replace(replace(twenty, "line 5\n", "five\n"), "line 12\n", "twelve\n")},
      {"changes 7 lines apart do not", twenty,
       replace(replace(twenty, "line 5\n", "five\n"), "line 13\n", "thirteen\n")},
      {"no final newline, old side", "a\nb\nc", "a\nb\nc\nd\n"},
      {"no final newline, new side", "a\nb\nc\n", "a\nb\nx"},
      {"no final newline, both sides", "a\nb\nc", "a\nB\nc"},
      {"no final newline as context", ten + "tail", replace(ten, "line 9\n", "nine\n") + "tail"},
      {"only the final newline changes", "a\nb\n", "a\nb"},
      {"only the final newline is added", "a\nb", "a\nb\n"},
      {"everything replaced", ten, numbered(11, 25)},
      {"blank lines", "a\n\nb\n\nc\n", "a\n\nB\n\n\nc\n"},
      {"CRLF lines", "a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n"},
      {"a repeated line inserted", "x\na\ny\n", "x\na\na\ny\n"},
      {"a repeated block inserted", "h\na\nb\na\nb\nt\n", "h\na\nb\na\nb\na\nb\nt\n"},
      {"repeated lines deleted", "{\n}\n{\n}\n{\n}\n", "{\n}\n"},
      {"braces", "f() {\n  a;\n}\n\ng() {\n  b;\n}\n",
       "f() {\n  a;\n}\n\nh() {\n  c;\n}\n\ng() {\n  b;\n}\n"},
  };
  for (const auto& c : cases) expectLikeDiff(c.oldContent, c.newContent, c.what);
}

TEST_F(Diff, MatchesDiffForRandomEdits) {
  // Small alphabets make many equal lines, where a diff has choices to make.
  std::mt19937 rng(20240611);
  const std::vector<std::string> alphabet = {"a\n", "b\n", "c\n", "\n", "}\n", "d\n", "e\n"};
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  for (int round = 0; round < 250; ++round) {
    const size_t letters = 2 + pick(alphabet.size() - 1);
    std::vector<std::string> lines;
    for (size_t i = 0, n = pick(30); i < n; ++i) lines.push_back(alphabet[pick(letters)]);
    std::vector<std::string> edited = lines;
    for (size_t e = 0, edits = pick(6); e < edits; ++e) {
      const size_t at = pick(edited.size() + 1);
      switch (pick(3)) {
        case 0:
          edited.insert(edited.begin() + static_cast<ptrdiff_t>(at), alphabet[pick(letters)]);
          break;
        case 1:
          if (at < edited.size()) edited.erase(edited.begin() + static_cast<ptrdiff_t>(at));
          break;
        default:
          if (at < edited.size()) edited[at] = alphabet[pick(letters)];
      }
    }
    std::string oldText, newText;
    for (const auto& l : lines) oldText += l;
    for (const auto& l : edited) newText += l;
    if (pick(4) == 0 && !oldText.empty()) oldText.pop_back();  // no final newline
    if (pick(4) == 0 && !newText.empty()) newText.pop_back();
    expectLikeDiff(oldText, newText, "round " + std::to_string(round));
    if (HasFailure()) break;
  }
}

TEST_F(Diff, LargeFileWithFewChangesIsStillShown) {
  const std::string old = numbered(1, 20000);
  std::string changed = old;
  changed.replace(changed.find("line 10000\n"), 11, "line ten thousand\n");
  changed += "appended\n";
  expectLikeDiff(old, changed, "20000 lines, two changes");
  // A complete rewrite of a large file costs little: no line matches.
  expectLikeDiff(numbered(1, 5000), numbered(5001, 9000), "complete rewrite");
}

TEST_F(Diff, TooCostlyDiffIsSummarisedInLines) {
  // Thousands of lines of few distinct values, reshuffled: every line has
  // matches, and a shortest edit script is long.
  std::mt19937 rng(7);
  std::string old, changed;
  for (int i = 0; i < 20000; ++i) {
    old += rng() % 2 ? "a\n" : "b\n";
    changed += rng() % 2 ? "a\n" : "b\n";
  }
  EXPECT_EQ(unifiedDiff(old, changed, kLabel),
            "(content differs: 20000 → 20000 lines; too large to show)\n");
}

TEST_F(Diff, OversizedContentIsSummarised) {
  const std::string big(1 << 20 | 1, 'x');
  EXPECT_EQ(unifiedDiff(std::string_view("small\n"), big, kLabel),
            "(content differs: 6 → 1048577 bytes; too large to show)\n");
  EXPECT_EQ(unifiedDiff(std::string_view(big), "small\n", kLabel),
            "(content differs: 1048577 → 6 bytes; too large to show)\n");
  EXPECT_EQ(unifiedDiff(std::nullopt, big, kLabel),
            "(content differs: 0 → 1048577 bytes; too large to show)\n");
}

TEST_F(Diff, BinaryContentIsSummarised) {
  const std::string binary("a\0b\n", 4);
  EXPECT_EQ(unifiedDiff(std::string_view("text\n"), binary, kLabel),
            "(binary content differs: 5 → 4 bytes)\n");
  EXPECT_EQ(unifiedDiff(std::string_view(binary), "text\n", kLabel),
            "(binary content differs: 4 → 5 bytes)\n");
  EXPECT_EQ(unifiedDiff(std::nullopt, binary, kLabel), "(binary content differs: 0 → 4 bytes)\n");
}

TEST_F(Diff, LabelsAreTheDeclaredPath) {
  EXPECT_EQ(unifiedDiff(std::nullopt, "x\n", kLabel),
            "--- /dev/null\n+++ b/etc/app/config\n@@ -0,0 +1 @@\n+x\n");
  EXPECT_EQ(unifiedDiff(std::string_view("x\n"), "y\n", kLabel),
            "--- a/etc/app/config\n+++ b/etc/app/config\n@@ -1 +1 @@\n-x\n+y\n");
  EXPECT_EQ(unifiedDiff(std::string_view("same\n"), "same\n", kLabel), "");
}

}  // namespace
}  // namespace mesh::apply
