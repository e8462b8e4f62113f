// What every benchmark program needs: statistics over runs, a child started with its
// output in a log (tests/support/child.hh), a shell command's last line, and the
// machine's name for the report; and what the file benchmarks share: their options,
// scratch directory, tree of files and declaration.
#pragma once

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../tests/support/child.hh"
#include "../tests/support/files.hh"

namespace mesh::bench {

// The p-quantile (0..1) of v, nearest rank; 0 for none.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1,
                    static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

// The median; the mean of the middle two for an even count.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Starts argv[0] (a path) with stdout and stderr appended to `log`; returns its pid.
inline pid_t spawn(const std::vector<std::string>& argv, const std::string& log) {
  return test::spawnChild(argv, log, "", test::Output::Append);
}

// Starts argv[0] (a path, or a name looked up in PATH) with stdin from /dev/null and
// stdout and stderr in the files named (truncated), `env` ("K=V") added; its pid.
inline pid_t spawnTo(const std::vector<std::string>& argv, const std::string& outPath,
                     const std::string& errPath, const std::vector<std::string>& env = {}) {
  return test::spawnChild(argv, outPath, errPath, test::Output::Truncate, env);
}

// The last line `cmd` prints (trailing blanks dropped).
inline std::string shellOut(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while (p && (n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (p) ::pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  const auto nl = out.rfind('\n');
  return nl == std::string::npos ? out : out.substr(nl + 1);
}

using ::mesh::test::slurp;

inline std::string firstLine(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

// "20,100" as {20, 100}: the node counts the fleet benchmarks' --nodes takes.
inline std::vector<int> commaList(const std::string& text) {
  std::vector<int> out;
  std::stringstream s(text);
  for (std::string x; std::getline(s, x, ',');) out.push_back(std::stoi(x));
  return out;
}

// The file benchmarks' tree: file i at /srv/bench/dNNN/fNNNNN, over `dirs`
// directories (kDirectories unless a benchmark's shape says otherwise: 1 puts every
// file in /srv/bench/d000).
inline constexpr int kDirectories = 100;
inline std::string relPath(int i, int dirs = kDirectories) {
  return fmt::format("/srv/bench/d{:03}/f{:05}", i % dirs, i);
}

// Past fingerprintIsRacy's 1 s window (src/util/fs.cc): stat data younger than that
// is never trusted, so a file is re-hashed until it is this old.
inline constexpr auto kSettle = std::chrono::milliseconds(1100);

// `label` padded with letters to `size` bytes, the last one a newline: no character
// TOML or CFEngine would escape.
inline std::string paddedContent(std::string label, size_t size) {
  while (label.size() + 1 < size) label += "abcdefghijklmnopqrstuvwxyz"[label.size() % 26];
  return label + "\n";
}

// The declaration of n `file` resources (module bench), file i at relPath(i, dirs)
// holding content(i).
inline std::string filesDeclaration(int n, const std::function<std::string(int)>& content,
                                    int dirs = kDirectories) {
  std::string out;
  for (int i = 0; i < n; ++i)
    out += fmt::format("[module.bench.file.f{:05}]\npath = \"{}\"\ncontent = \"\"\"{}\"\"\"\n\n", i,
                       relPath(i, dirs), content(i));
  return out;
}

// What the file benchmarks (bench_files.cc, noop_vs_cfengine.cc) are both given:
// --bin PATH (default the mesh-host built with them), --runs N, --dir TMPDIR, --keep,
// and the sizes N… to measure.
struct FileBenchArgs {
#ifdef MESH_HOST_BIN
  std::string bin = MESH_HOST_BIN;
#else
  std::string bin;
#endif
  int runs = 5;
  bool keep = false;
  std::string tmp = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  std::vector<int> sizes;

  // Takes argv[i] (and the value after it) when it is one of these; false when not.
  bool take(int argc, char** argv, int& i) {
    const std::string a = argv[i];
    if (a == "--bin" && i + 1 < argc) {
      bin = argv[++i];
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (a == "--dir" && i + 1 < argc) {
      tmp = argv[++i];
    } else if (a == "--keep") {
      keep = true;
    } else if (!a.empty() && std::isdigit(static_cast<unsigned char>(a[0]))) {
      sizes.push_back(std::atoi(a.c_str()));
    } else {
      return false;
    }
    return true;
  }
};

// A new directory <tmp>/<name>.XXXXXX for a benchmark's files; empty, said on stderr
// as `program`'s, when it cannot be made.
inline std::string makeScratch(const std::string& tmp, const std::string& name,
                               const std::string& program) {
  std::string path = tmp + "/" + name + ".XXXXXX";
  if (!::mkdtemp(path.data())) {
    std::fprintf(stderr, "%s: cannot create a directory in %s\n", program.c_str(), tmp.c_str());
    return "";
  }
  return path;
}

inline std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

}  // namespace mesh::bench
