// Benchmark: a one-shot no-op apply of N `file` resources against CFEngine's cf-agent
// on the same files, and against the floor (a process that only fstatat()s them).
//
// For each N it builds, in a temp directory, N files of ~200 bytes in two shapes —
// spread over 100 directories, and all in one directory — each twice: one tree
// converged by mesh-host (a TOML declaration), one by cf-agent (an equivalent
// policy: `files:` promises with `content` and `perms`). After one converging run
// of each and a settling wait, it runs, alternating over both shapes, `mesh-host
// apply`, `cf-agent -KI -f policy.cf` with its work directory as packaged (no -w:
// /var/lib/cfengine3 on Debian) and with one the bench makes (`-w DIR`, a key pair
// from cf-key), and the floor; and takes from wait4() each whole process's wall time,
// CPU (user + system) and peak RSS (through bench/measure.c). It prints medians and
// the ratios. Every run is checked to be a no-op (mesh-host: N unchanged; cf-agent:
// no repair reported; floor: N found), so a wrong fast path cannot look fast.
// Then the idle agent: `mesh-host run` (builtin supervisor) after its first cycle.
//
// It installs nothing: without cf-agent it says how to get it and measures the rest.
//
//   mesh_bench_noop [--bin PATH] [--floor PATH] [--measure PATH] [--runs 5] [--dir TMPDIR] [--keep]
//   [N…] (default N: 5000 10000 50000)
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
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
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hh"

namespace {

using namespace mesh::bench;  // bench_util.hh

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Run {
  double wallMs = 0, cpuMs = 0;
  double rssMiB = 0;
  int code = -1;
  std::string out, err;
};

// Through mesh_bench_measure (bench/measure.c): the command's own wall time, CPU
// and peak RSS, none of ours.
std::string gMeasure;

Run runChild(const std::vector<std::string>& argv, const std::string& scratch,
             const std::vector<std::string>& env = {}) {
  const std::string outPath = scratch + "/child.out", errPath = scratch + "/child.err",
                    figures = scratch + "/child.figures";
  std::vector<std::string> measured{gMeasure, figures};
  measured.insert(measured.end(), argv.begin(), argv.end());
  ::unlink(figures.c_str());
  const pid_t pid = spawnTo(measured, outPath, errPath, env);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error("waitpid failed");
  Run r;
  long long wallUs = 0, cpuUs = 0;
  long rssKiB = 0;
  if (std::sscanf(slurp(figures).c_str(), "%lld %lld %ld %d", &wallUs, &cpuUs, &rssKiB, &r.code) !=
      4)
    throw std::runtime_error("mesh_bench_measure failed for " + argv[0]);
  r.wallMs = static_cast<double>(wallUs) / 1e3;
  r.cpuMs = static_cast<double>(cpuUs) / 1e3;
  r.rssMiB = static_cast<double>(rssKiB) / 1024;
  r.out = slurp(outPath);
  r.err = slurp(errPath);
  return r;
}

// ~200 bytes, distinct per file; no character TOML or CFEngine would escape.
std::string contentOf(int i) {
  return paddedContent(fmt::format("file {:05} ", i), 200);
}

// The two shapes: files spread over kDirectories directories, or all in one.
constexpr int kShapes[] = {kDirectories, 1};

std::string declaration(int n, int dirs = kDirectories) {
  return filesDeclaration(n, contentOf, dirs);
}

// The same files as `files:` promises: created with this content, mode 0644.
std::string policy(int n, const std::string& root, int dirs) {
  std::string out = "bundle agent main\n{\n  files:\n";
  out.reserve(static_cast<size_t>(n) * 350);
  for (int i = 0; i < n; ++i)
    out += fmt::format(
        "    \"{}{}\"\n      create => \"true\",\n      content => \"{}\",\n      perms => "
        "m(\"644\");\n",
        root, relPath(i, dirs), contentOf(i));
  out += "}\nbody perms m(mode)\n{\n  mode => \"$(mode)\";\n  rxdirs => \"false\";\n}\n";
  return out;
}

std::optional<std::string> onPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(ss, dir, ':');)
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
  return std::nullopt;
}

// "cycle 3: 0 created, 0 updated, 5000 unchanged, 0 removed, 0 failed in 40 ms"
long unchangedIn(const std::string& out) {
  auto at = out.rfind("cycle ");
  if (at == std::string::npos) return -1;
  long cycle = 0, created = -1, updated = -1, unchanged = -1;
  if (std::sscanf(out.c_str() + at, "cycle %ld: %ld created, %ld updated, %ld unchanged", &cycle,
                  &created, &updated, &unchanged) != 4 ||
      created != 0 || updated != 0)
    return -1;
  return unchanged;
}

struct Series {
  std::vector<double> wall, cpu, rss;
  void add(const Run& r) {
    wall.push_back(r.wallMs);
    cpu.push_back(r.cpuMs);
    rss.push_back(r.rssMiB);
  }
  bool empty() const { return wall.empty(); }
};

struct Row {
  int n = 0, dirs = kDirectories;
  Series mesh, cf, cfBench, floor;  // cf: the packaged work directory; cfBench: the bench's
};

class Bench {
 public:
  Bench(std::string bin, std::string floor, std::optional<std::string> cfAgent, std::string scratch,
        int runs)
      : bin_(std::move(bin)),
        floor_(std::move(floor)),
        cf_(std::move(cfAgent)),
        scratch_(std::move(scratch)),
        runs_(runs) {}

  // Both shapes of N files, runs alternating over tools and shapes.
  std::vector<Row> measure(int n) {
    struct Shape {
      std::string dir, root, cfRoot, decl, pol, list;
    };
    std::vector<Shape> shapes;
    std::vector<Row> rows;
    const std::string work = scratch_ + fmt::format("/n{}-cfwork", n);
    if (cf_) prepareCfWorkdir(work);
    for (int dirs : kShapes) {
      Shape sh;
      sh.dir = scratch_ + fmt::format("/n{}-d{}", n, dirs);
      sh.root = sh.dir + "/root", sh.cfRoot = sh.dir + "/cfroot";
      sh.decl = sh.dir + "/decl.toml", sh.pol = sh.dir + "/policy.cf",
      sh.list = sh.dir + "/paths.txt";
      fs::create_directories(sh.root);
      fs::create_directories(sh.cfRoot);
      std::ofstream(sh.decl, std::ios::binary) << declaration(n, dirs);
      std::ofstream(sh.pol, std::ios::binary) << policy(n, sh.cfRoot, dirs);
      {
        std::ofstream l(sh.list, std::ios::binary);
        for (int i = 0; i < n; ++i) l << relPath(i, dirs) << '\n';
      }
      expect(apply(sh.decl, sh.root).code == 0, "mesh-host: first apply failed");
      if (cf_) expect(cfAgent(sh.pol, work).code == 0, "cf-agent: first run failed");
      shapes.push_back(sh);
      rows.push_back(Row{n, dirs, {}, {}, {}, {}});
    }
    std::this_thread::sleep_for(kSettle);
    for (const auto& sh : shapes) {
      // Settles mesh-host's fingerprints (re-hashes each file once, past the racy window).
      expect(unchangedIn(apply(sh.decl, sh.root).out) == n,
             "mesh-host: settling apply was not a no-op");
      if (cf_) {
        cfAgent(sh.pol, work);
        cfAgent(sh.pol, std::nullopt);
      }
    }

    for (int run = 0; run < runs_; ++run)
      for (size_t s = 0; s < shapes.size(); ++s) {
        const Shape& sh = shapes[s];
        Row& row = rows[s];
        const Run m = apply(sh.decl, sh.root);
        expect(m.code == 0 && unchangedIn(m.out) == n,
               fmt::format("mesh-host: no-op apply of {} did not report {} unchanged:\n{}{}", n, n,
                           tail(m.out), m.err));
        row.mesh.add(m);
        if (cf_) {
          for (const auto& [w, series] :
               {std::pair{std::optional<std::string>(), &row.cf},
                std::pair{std::optional<std::string>(work), &row.cfBench}}) {
            const Run c = cfAgent(sh.pol, w);
            expect(c.code == 0 && !repaired(c.out + c.err),
                   fmt::format("cf-agent: run was not a no-op (exit {}):\n{}{}", c.code,
                               tail(c.out), tail(c.err)));
            series->add(c);
          }
        }
        const Run f = runChild({floor_, sh.root, sh.list}, scratch_);
        expect(f.code == 0 && f.out == fmt::format("{} found, 0 missing\n", n),
               "floor: not every file found: " + f.out + f.err);
        row.floor.add(f);
      }
    if (!keep_) {
      for (const auto& sh : shapes) fs::remove_all(sh.dir);
      fs::remove_all(work);
    }
    return rows;
  }

  // The agent (builtin supervisor) after its first cycle: resident set and peak.
  std::pair<double, double> idleAgent(int n) {
    const std::string dir = scratch_ + fmt::format("/idle{}", n), root = dir + "/root";
    const std::string decl = dir + "/decl.toml", log = dir + "/agent.log";
    fs::create_directories(root);
    std::ofstream(decl, std::ios::binary) << declaration(n);
    const pid_t pid =
        spawnTo({bin_, "run", "--declaration", decl, "--root", root, "--node", "bench",
                 "--supervisor", "builtin", "--interval", "1h", "--splay", "0s"},
                dir + "/agent.out", log);
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    while (slurp(log).find("cycle 1") == std::string::npos) {
      if (Clock::now() > deadline || ::waitpid(pid, nullptr, WNOHANG) != 0) {
        ::kill(pid, SIGKILL);
        throw std::runtime_error("mesh-host run: no first cycle logged:\n" + slurp(log));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));  // idle now
    double rss = 0, hwm = 0;
    std::ifstream status(fmt::format("/proc/{}/status", pid));
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("VmRSS:", 0) == 0) rss = std::atof(line.c_str() + 6) / 1024;
      if (line.rfind("VmHWM:", 0) == 0) hwm = std::atof(line.c_str() + 6) / 1024;
    }
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
    if (!keep_) fs::remove_all(dir);
    return {rss, hwm};
  }

  void keep() { keep_ = true; }

 private:
  static void expect(bool ok, const std::string& what) {
    if (!ok) throw std::runtime_error(what);
  }
  static std::string tail(const std::string& s) {
    return s.substr(s.size() > 2000 ? s.size() - 2000 : 0);
  }
  // cf-agent -I reports each repair as an info line; a kept promise prints nothing
  // (with -w it also says which work directory it took: not a repair).
  static bool repaired(const std::string& out) {
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);)
      if (line.find("info:") != std::string::npos &&
          line.find("Setting workdir") == std::string::npos)
        return true;
    return false;
  }

  Run apply(const std::string& decl, const std::string& root) {
    return runChild({bin_, "apply", decl, "--root", root, "--node", "bench"}, scratch_);
  }

  // With `work`, cf-agent's work directory is the bench's (-w); without, the one it
  // was packaged with.
  Run cfAgent(const std::string& pol, const std::optional<std::string>& work) {
    if (!work) return runChild({*cf_, "-KI", "-f", pol}, scratch_);
    return runChild({*cf_, "-KI", "-w", *work, "-f", pol}, scratch_);
  }

  // The bench's work directory for cf-agent: a key pair (cf-key) and cf-promises
  // where it looks for it.
  void prepareCfWorkdir(const std::string& work) {
    fs::create_directories(work + "/bin");
    fs::create_symlink(fs::path(*cf_).parent_path() / "cf-promises", work + "/bin/cf-promises");
    const Run key = runChild({(fs::path(*cf_).parent_path() / "cf-key").string()}, scratch_,
                             {"CFENGINE_TEST_OVERRIDE_WORKDIR=" + work});
    expect(key.code == 0, "cf-key failed: " + key.err);
  }

  std::string bin_, floor_;
  std::optional<std::string> cf_;
  std::string scratch_;
  int runs_;
  bool keep_ = false;
};

std::string osName() {
  std::ifstream in("/etc/os-release");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
      return v;
    }
  return "unknown OS";
}

std::string cell(const Series& s, const std::vector<double> Series::*field, const char* fmtSpec) {
  if (s.empty()) return "-";
  return fmt::format(fmt::runtime(fmtSpec), median(s.*field));
}

std::string ratio(const Series& a, const Series& b, const std::vector<double> Series::*field) {
  if (a.empty() || b.empty()) return "-";
  return fmt::format("{:.1f}x", median(a.*field) / median(b.*field));
}

}  // namespace

int main(int argc, char** argv) {
  FileBenchArgs args;
#ifdef MESH_FLOOR_BIN
  std::string floor = MESH_FLOOR_BIN;
  gMeasure = MESH_MEASURE_BIN;
#else
  std::string floor;
#endif
  bool idle = true;
  for (int i = 1; i < argc; ++i) {
    if (args.take(argc, argv, i)) continue;
    const std::string a = argv[i];
    if (a == "--floor" && i + 1 < argc) {
      floor = argv[++i];
    } else if (a == "--measure" && i + 1 < argc) {
      gMeasure = argv[++i];
    } else if (a == "--no-idle") {
      idle = false;
    } else {
      std::cerr << "usage: mesh_bench_noop [--bin PATH] [--floor PATH] [--measure PATH] [--runs 5] "
                   "[--dir TMPDIR] "
                   "[--keep] [--no-idle] [N…]\n";
      return 2;
    }
  }
  auto& [bin, runs, keep, tmp, sizes] = args;
  if (sizes.empty()) sizes = {5000, 10000, 50000};
  if (bin.empty() || floor.empty() || gMeasure.empty() || runs < 1) {
    std::cerr << "mesh_bench_noop: give --bin, --floor, --measure and --runs >= 1\n";
    return 2;
  }

  const std::string scratch = makeScratch(tmp, "mesh-bench-noop", "mesh_bench_noop");
  if (scratch.empty()) return 1;
  const auto cf = onPath("cf-agent");
  const Run version = runChild({bin, "--version"}, scratch);
  std::string cfVersion =
      "not installed: apt-get install cfengine3 (only mesh-host and the floor "
      "are measured)";
  if (cf) cfVersion = firstLine(runChild({*cf, "--version"}, scratch).out) + " (" + *cf + ")";

  fmt::print("mesh-host: {} ({})\n", firstLine(version.out), bin);
  fmt::print("cf-agent:  {}\n", cfVersion);
  fmt::print("machine:   {}, {} CPU(s), {}; files under {}\n", osName(),
             std::thread::hardware_concurrency(), cpuModel(), scratch);
  fmt::print(
      "method:    N files of 200 bytes, mode 0644, over {} directories and in 1, converged once\n"
      "           by each tool, then (after {} ms and one settling run) {} runs alternating over\n"
      "           both shapes of `mesh-host apply`, `cf-agent -KI -f policy.cf` (its work\n"
      "           directory as packaged: pkg; the bench's: -w DIR) and the fstatat floor; each a\n"
      "           whole process: wall, CPU = user + system, peak RSS (wait4). Medians.\n\n",
      kDirectories, kSettle.count(), runs);
  std::fflush(stdout);

  Bench bench(bin, floor, cf, scratch, runs);
  if (keep) bench.keep();
  std::vector<Row> rows;
  std::vector<std::pair<int, std::pair<double, double>>> idles;
  try {
    for (int n : sizes)
      for (const Row& r : bench.measure(n)) {
        rows.push_back(r);
        fmt::print(stderr,
                   "N={} in {} dir(s): mesh-host {:.1f} ms, cf-agent {} ms (packaged work "
                   "directory), {} ms (the bench's), floor {:.1f} ms (wall)\n",
                   n, r.dirs, median(r.mesh.wall), cell(r.cf, &Series::wall, "{:.0f}"),
                   cell(r.cfBench, &Series::wall, "{:.0f}"), median(r.floor.wall));
      }
    if (idle)
      for (int n : {10, sizes.front()}) idles.push_back({n, bench.idleAgent(n)});
  } catch (const std::exception& e) {
    std::cerr << "mesh_bench_noop: " << e.what() << "\n";
    if (!keep) fs::remove_all(scratch);
    return 1;
  }
  if (!keep) fs::remove_all(scratch);

  fmt::print("| {:>6} | {:>4} | {:<15} | {:>8} | {:>8} | {:>8} |\n", "N", "dirs", "", "wall ms",
             "CPU ms", "RSS MiB");
  fmt::print("|-{:->6}-|-{:->4}-|-{:-<15}-|-{:->8}-|-{:->8}-|-{:->8}-|\n", "", "", "", "", "", "");
  for (const auto& r : rows) {
    const std::pair<const char*, const Series*> tools[] = {{"mesh-host", &r.mesh},
                                                           {"cf-agent (pkg)", &r.cf},
                                                           {"cf-agent (-w)", &r.cfBench},
                                                           {"floor", &r.floor}};
    for (const auto& [name, s] : tools)
      fmt::print("| {:>6} | {:>4} | {:<15} | {:>8} | {:>8} | {:>8} |\n", r.n, r.dirs, name,
                 cell(*s, &Series::wall, "{:.1f}"), cell(*s, &Series::cpu, "{:.1f}"),
                 cell(*s, &Series::rss, "{:.1f}"));
  }
  fmt::print("\n| {:>6} | {:>4} | {:>20} | {:>19} | {:>19} |\n", "N", "dirs", "cf(pkg)/mesh wall",
             "cf(-w)/mesh wall", "mesh CPU / floor CPU");
  fmt::print("|-{:->6}-|-{:->4}-|-{:->20}-|-{:->19}-|-{:->19}-|\n", "", "", "", "", "");
  for (const auto& r : rows)
    fmt::print("| {:>6} | {:>4} | {:>20} | {:>19} | {:>20} |\n", r.n, r.dirs,
               ratio(r.cf, r.mesh, &Series::wall), ratio(r.cfBench, r.mesh, &Series::wall),
               ratio(r.mesh, r.floor, &Series::cpu));
  for (const auto& [n, rss] : idles)
    fmt::print(
        "\nidle agent (`mesh-host run`, builtin supervisor, {} files, after its first "
        "cycle): RSS {:.1f} MiB, peak {:.1f} MiB",
        n, rss.first, rss.second);
  fmt::print("\n");
  return 0;
}
