// Fleet push latency: N `mesh-host run --etcd` node processes (each with its own
// --root and --state-dir, builtin supervisor, one file declared) on one etcd started
// here; each round runs `mesh-host fleet push --nodes 'b-*'` with a new serial and
// measures, per node, the time from the start of the push command until the node's
// status in etcd shows a cycle of that revision (seen on one watch of the nodes'
// prefix). Prints p50/p99/max per round and the medians over the rounds.
//
//   mesh_bench_fleet_push [--nodes 20,100] [--rounds 5] [--keep]
#include <fcntl.h>
#include <signal.h>
#include <sodium.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fleet/etcd.hh"
#include "fleet/protocol.hh"
#include "trust/operator_key.hh"

#include "bench_util.hh"

namespace {

using namespace mesh::bench;  // bench_util.hh

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace mesh::fleet;

struct Round {
  double p50, p99, max;
};

// Runs one fleet of n nodes for `rounds` pushes.
std::vector<Round> benchFleet(int n, int rounds, const std::string& base) {
  const std::string dir = fmt::format("{}/n{}", base, n);
  fs::create_directories(dir);
  const std::string etcdDir = dir + "/etcd";
  const std::string url =
      shellOut(fmt::format("ETCD_OWNER_PID={} {} start {}", ::getpid(), MESH_ETCD_SCRIPT, etcdDir));
  if (url.rfind("http://", 0) != 0) throw std::runtime_error("etcd did not start: " + url);
  auto key = mesh::trust::OperatorKey::generate();
  const std::string keyFile = dir + "/ops.key";
  key.saveNew(keyFile);
  const std::string cluster = "bench";
  FleetKeys keys{cluster};
  EtcdClient etcd(url);

  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    const std::string name = fmt::format("b-{:03}", i), root = dir + "/" + name;
    fs::create_directories(root);
    pids.push_back(spawn({MESH_HOST_BIN, "run", "--etcd", url, "--cluster", cluster, "--node", name,
                          "--root", root, "--trust", key.publicKey().text(), "--interval", "5m",
                          "--splay", "0", "--supervisor", "builtin"},
                         root + ".log"));
  }
  // Every node up (its status published) before the first push.
  const auto upBy = Clock::now() + std::chrono::seconds(60);
  while (static_cast<int>(etcd.getPrefix(keys.nodesPrefix()).kvs.size()) < 2 * n &&
         Clock::now() < upBy)
    ::usleep(50'000);

  std::vector<Round> out;
  for (int r = 1; r <= rounds; ++r) {
    const std::string decl = fmt::format("{}/decl-{}.toml", dir, r);
    std::ofstream(decl) << fmt::format(
        "serial = {}\n\n[module.bench.file.motd]\npath = \"/etc/motd\"\ncontent = \"round {}\"\n",
        r, r);
    const int64_t before = etcd.getPrefix(keys.nodesPrefix()).revision;
    std::map<std::string, double> seen;  // node -> ms after the push began
    std::map<std::string, int64_t> wanted;
    const auto t0 = Clock::now();
    // The push runs as a child process while this one watches.
    pid_t push = spawn({MESH_HOST_BIN, "fleet", "push", "--etcd", url, "--cluster", cluster,
                        "--key", keyFile, "--nodes", "b-*", decl},
                       dir + "/push.log");
    int64_t from = before + 1;
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (static_cast<int>(seen.size()) < n && Clock::now() < deadline) {
      etcd.watch(
          keys.nodesPrefix(), from,
          [&](const std::vector<EtcdEvent>& events) {
            const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
            for (const auto& e : events) {
              from = e.kv.modRevision + 1;
              auto parts = keys.splitNodeKey(e.kv.key);
              if (!parts || e.type != EtcdEvent::Type::Put) continue;
              if (parts->second == "declaration") wanted[parts->first] = e.kv.modRevision;
              if (parts->second != "status" || seen.count(parts->first)) continue;
              auto s = decodeStatus(e.kv.value, e.kv.key);
              auto w = wanted.find(parts->first);
              if (w != wanted.end() && s.revision >= w->second && s.cycle > 0)
                seen[parts->first] = ms;
            }
            return static_cast<int>(seen.size()) < n;
          },
          std::chrono::seconds(5), EtcdClient::WatchScope::Prefix);
    }
    int status = 0;
    ::waitpid(push, &status, 0);
    if (static_cast<int>(seen.size()) < n)
      throw std::runtime_error(
          fmt::format("round {}: only {} of {} nodes applied within 60 s", r, seen.size(), n));
    std::vector<double> v;
    for (const auto& [node, ms] : seen) v.push_back(ms);
    out.push_back({percentile(v, 0.5), percentile(v, 0.99), *std::max_element(v.begin(), v.end())});
    std::printf("  N=%d round %d: p50 %.0f ms, p99 %.0f ms, max %.0f ms\n", n, r, out.back().p50,
                out.back().p99, out.back().max);
    std::fflush(stdout);
  }
  for (pid_t p : pids) ::kill(p, SIGTERM);
  for (pid_t p : pids) ::waitpid(p, nullptr, 0);
  shellOut(fmt::format("{} stop {}", MESH_ETCD_SCRIPT, etcdDir));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (sodium_init() < 0) return 1;
  std::vector<int> sizes = {20, 100};
  int rounds = 5;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--nodes" && i + 1 < argc) {
      sizes = commaList(argv[++i]);
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::stoi(argv[++i]);
    } else if (a == "--keep") {
      keep = true;
    } else {
      std::fprintf(stderr, "usage: %s [--nodes 20,100] [--rounds 5] [--keep]\n", argv[0]);
      return 2;
    }
  }
  char tmpl[] = "/tmp/mesh-bench-fleet.XXXXXX";
  const std::string base = ::mkdtemp(tmpl);
  std::printf(
      "fleet push: time from `fleet push` start until each node's status shows the new "
      "revision applied (%d rounds)\n",
      rounds);
  std::vector<std::string> rows;
  int rc = 0;
  try {
    for (int n : sizes) {
      auto rs = benchFleet(n, rounds, base);
      std::vector<double> p50, p99, mx;
      for (const auto& r : rs) {
        p50.push_back(r.p50);
        p99.push_back(r.p99);
        mx.push_back(r.max);
      }
      rows.push_back(fmt::format("| {:>4} | {:>6.0f} | {:>6.0f} | {:>6.0f} |", n, median(p50),
                                 median(p99), median(mx)));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mesh_bench_fleet_push: %s\n", e.what());
    rc = 1;
  }
  std::printf("\n| N    | p50 ms | p99 ms | max ms |  (medians over rounds)\n");
  std::printf("| ---- | ------ | ------ | ------ |\n");
  for (const auto& r : rows) std::printf("%s\n", r.c_str());
  ::system(fmt::format("pkill -9 -f {}/ 2>/dev/null", base).c_str());
  if (!keep) fs::remove_all(base);
  return rc;
}
