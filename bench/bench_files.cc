// Benchmark: `file` resources at scale. For each N it measures, over several runs,
// the wall time and peak RSS of the real mesh-host binary for
//   first apply  — a fresh root every run (creates N files);
//   no-op apply  — nothing to do (every file is as declared and its stat data settled);
//   1% drift     — N/100 files edited behind mesh-host's back, then repaired.
// and prints the medians. It measures; it asserts only that each run did what the
// scenario says (exit code and summary counts), so a wrong fast path cannot look fast.
//
//   mesh_bench_files [--bin PATH] [--runs 5] [--dir TMPDIR] [--keep] [N…]   (default N: 1000 10000)
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hh"

namespace {

using namespace mesh::bench;  // bench_util.hh

namespace fs = std::filesystem;

struct Run {
  double ms = 0;
  long maxRssKiB = 0;
  int code = -1;
  std::string out, err;
};

// fork + exec + wait4: the child's own wall time and peak RSS, nothing of ours.
Run runChild(const std::vector<std::string>& argv, const std::string& scratch) {
  const std::string outPath = scratch + "/child.out", errPath = scratch + "/child.err";
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = spawnTo(argv, outPath, errPath);
  int status = 0;
  struct rusage ru {};
  while (::wait4(pid, &status, 0, &ru) < 0) {
    if (errno != EINTR) throw std::runtime_error("wait4 failed");
  }
  Run r;
  r.ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  r.maxRssKiB = ru.ru_maxrss;  // KiB on Linux
  r.code = mesh::test::exitCodeOf(status);
  r.out = slurp(outPath);
  r.err = slurp(errPath);
  return r;
}

// ~100 bytes, distinct per file and per generation.
std::string contentOf(int i, int generation) {
  return paddedContent(fmt::format("file {:05} generation {} ", i, generation), 100);
}

std::string declaration(int n) {
  return filesDeclaration(n, [](int i) { return contentOf(i, 0); });
}

// "cycle 3: 0 created, 100 updated, 9900 unchanged, 0 removed, 0 failed in 40 ms"
struct Summary {
  long created = -1, updated = -1, unchanged = -1, removed = -1, failed = -1;
  long ms = -1;  // the cycle's own time, as mesh-host reports it (without start-up and parsing)
};
Summary summaryOf(const std::string& out) {
  Summary s;
  auto at = out.rfind("cycle ");
  if (at == std::string::npos) return s;
  long cycle = 0;
  std::sscanf(out.c_str() + at,
              "cycle %ld: %ld created, %ld updated, %ld unchanged, %ld removed, %ld failed in %ld",
              &cycle, &s.created, &s.updated, &s.unchanged, &s.removed, &s.failed, &s.ms);
  return s;
}

struct Row {
  int n = 0;
  std::string scenario;
  std::vector<double> ms, rss, cycleMs;
};

class Bench {
 public:
  Bench(std::string bin, std::string scratch, int runs)
      : bin_(std::move(bin)), scratch_(std::move(scratch)), runs_(runs) {}

  std::vector<Row> measure(int n) {
    const std::string decl = scratch_ + fmt::format("/decl-{}.toml", n);
    std::ofstream(decl, std::ios::binary) << declaration(n);

    Row first{n, "first apply", {}, {}, {}};
    std::string root;
    for (int run = 0; run < runs_; ++run) {
      if (!root.empty()) fs::remove_all(root);
      root = scratch_ + fmt::format("/root-{}-{}", n, run);
      fs::create_directories(root);
      record(first, apply(decl, root), n, {n, 0, 0});
    }

    // The last fresh root goes on. Wait out the racy window, then settle: this apply
    // re-hashes every file once and records fingerprints it may trust from now on.
    std::this_thread::sleep_for(kSettle);
    check(apply(decl, root), "settling apply", {0, 0, n});
    Row noop{n, "no-op apply", {}, {}, {}};
    for (int run = 0; run < runs_; ++run) record(noop, apply(decl, root), n, {0, 0, n});

    const int drifted = std::max(1, n / 100);
    Row drift{n, "apply after 1% drift", {}, {}, {}};
    for (int run = 0; run < runs_; ++run) {
      // Different files each run, spread over the directories; the repaired files of
      // the previous run must be settled first or they would be re-hashed as well.
      std::this_thread::sleep_for(kSettle);
      for (int k = 0; k < drifted; ++k) {
        // 7919 is prime to N: distinct files, and i % 100 spreads them over directories.
        const int i = static_cast<int>((7919L * k + 104729L * run) % n);
        std::ofstream(root + relPath(i), std::ios::binary | std::ios::trunc)
            << contentOf(i, run + 1);
      }
      record(drift, apply(decl, root), n, {0, drifted, n - drifted});
    }
    if (!keep_) fs::remove_all(root);
    return {first, noop, drift};
  }

  void keep() { keep_ = true; }

 private:
  struct Expect {
    long created, updated, unchanged;
  };

  Run apply(const std::string& decl, const std::string& root) {
    return runChild({bin_, "apply", decl, "--root", root, "--node", "bench"}, scratch_);
  }

  static void check(const Run& r, const std::string& what, Expect e) {
    const Summary s = summaryOf(r.out);
    if (r.code != 0 || s.created != e.created || s.updated != e.updated ||
        s.unchanged != e.unchanged || s.failed != 0)
      throw std::runtime_error(
          fmt::format("{}: expected exit 0 with {} created, {} updated, {} unchanged; got exit {}\n"
                      "stdout (tail): {}\nstderr: {}",
                      what, e.created, e.updated, e.unchanged, r.code,
                      r.out.substr(r.out.size() > 2000 ? r.out.size() - 2000 : 0), r.err));
  }

  void record(Row& row, const Run& r, int n, Expect e) {
    check(r, fmt::format("N={} {}", n, row.scenario), e);
    row.ms.push_back(r.ms);
    row.cycleMs.push_back(static_cast<double>(summaryOf(r.out).ms));
    row.rss.push_back(static_cast<double>(r.maxRssKiB));
  }

  std::string bin_, scratch_;
  int runs_;
  bool keep_ = false;
};

std::string filesystemOf(const std::string& dir) {
  struct statfs sf {};
  if (::statfs(dir.c_str(), &sf) != 0) return "unknown";
  switch (static_cast<unsigned long>(sf.f_type)) {
    case 0xEF53:
      return "ext4";
    case 0x01021994:
      return "tmpfs";
    case 0x794C7630:
      return "overlayfs";
    case 0x9123683E:
      return "btrfs";
    case 0x58465342:
      return "xfs";
    default:
      return fmt::format("fs type {:#x}", static_cast<unsigned long>(sf.f_type));
  }
}

}  // namespace

int main(int argc, char** argv) {
  FileBenchArgs args;
  for (int i = 1; i < argc; ++i) {
    if (!args.take(argc, argv, i)) {
      std::cerr << "usage: mesh_bench_files [--bin PATH] [--runs 5] [--dir TMPDIR] [--keep] [N…]\n";
      return 2;
    }
  }
  auto& [bin, runs, keep, tmp, sizes] = args;
  if (sizes.empty()) sizes = {1000, 10000};
  if (bin.empty() || runs < 1) {
    std::cerr << "mesh_bench_files: give the mesh-host binary with --bin and --runs >= 1\n";
    return 2;
  }

  const std::string scratch = makeScratch(tmp, "mesh-bench", "mesh_bench_files");
  if (scratch.empty()) return 1;
  const Run version = runChild({bin, "--version"}, scratch);

  fmt::print("mesh-host: {} ({})\n", firstLine(version.out), bin);
  fmt::print("machine:   {} CPU(s), {}; roots on {} ({})\n", std::thread::hardware_concurrency(),
             cpuModel(), filesystemOf(scratch), scratch);
  fmt::print(
      "method:    `mesh-host apply` of N `file` resources (~100 bytes of inline content each,\n"
      "           over {} directories); wall time and peak RSS (wait4 ru_maxrss) of the\n"
      "           mesh-host process; figures are medians of {} runs [min..max].\n"
      "           first apply: a fresh root every run. no-op: after waiting {} ms and one\n"
      "           settling apply, so every file's ctime/mtime is > 1 s old and the stat\n"
      "           fast path may trust it (racy-stat rule); every run reports N unchanged.\n"
      "           1% drift: N/100 files rewritten with other content before each run\n"
      "           (after waiting {} ms); every run reports N/100 updated.\n\n",
      kDirectories, runs, kSettle.count(), kSettle.count());
  std::fflush(stdout);

  Bench bench(bin, scratch, runs);
  if (keep) bench.keep();
  std::vector<Row> rows;
  try {
    for (int n : sizes) {
      auto r = bench.measure(n);
      rows.insert(rows.end(), r.begin(), r.end());
    }
  } catch (const std::exception& e) {
    std::cerr << "mesh_bench_files: " << e.what() << "\n";
    if (!keep) fs::remove_all(scratch);
    return 1;
  }
  if (!keep) fs::remove_all(scratch);

  fmt::print("| {:>6} | {:<20} | {:>26} | {:>14} | {:>12} |\n", "N", "scenario",
             "wall ms median [min..max]", "cycle ms (med)", "peak RSS KiB");
  fmt::print("|-{:->6}-|-{:-<20}-|-{:->26}-|-{:->14}-|-{:->12}-|\n", "", "", "", "", "");
  for (const auto& row : rows) {
    auto [lo, hi] = std::minmax_element(row.ms.begin(), row.ms.end());
    fmt::print("| {:>6} | {:<20} | {:>26} | {:>14.0f} | {:>12.0f} |\n", row.n, row.scenario,
               fmt::format("{:.1f} [{:.1f}..{:.1f}]", median(row.ms), *lo, *hi),
               median(row.cycleMs), median(row.rss));
  }
  fmt::print(
      "\nwall: the whole `mesh-host apply` process (start-up, reading and parsing the\n"
      "declaration, the cycle, exit). cycle: the time mesh-host reports for the cycle\n"
      "itself — what every cycle of the agent (`run`, declaration kept in memory) costs.\n");
  return 0;
}
