// What every benchmark program needs: statistics over runs, a child started with its
// output in a log, a shell command's last line, and the machine's name for the report.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
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

inline std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

}  // namespace mesh::bench
