// `fleet push` to many nodes: how long the push command itself takes (process start to
// exit, wall clock) against one etcd started here, for N nodes known in etcd (each
// enrolled, as `fleet enroll` puts it). No agents run: this measures the writes, not
// the nodes' cycles (bench/fleet_push.cc measures those with real agents). Each round
// pushes a new serial to every node (`--nodes 'b-*'`); prints every round and the median
// per N.
//
//   mesh_bench_fleet_push_many [--nodes 100,1000] [--rounds 7] [--mesh-host BIN]
//
// --mesh-host: the binary to time (default the one built with this bench), so that two
// builds can be compared on the same machine in one run.
#include <fcntl.h>
#include <sodium.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fleet/enroll.hh"
#include "fleet/etcd.hh"
#include "fleet/node_signed.hh"
#include "fleet/protocol.hh"
#include "trust/node_key.hh"
#include "trust/operator_key.hh"

#include "bench_util.hh"

namespace {

using namespace mesh::bench;  // bench_util.hh

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace mesh::fleet;

// Runs argv with output to `log` (truncated); its exit code.
int run(const std::vector<std::string>& argv, const std::string& log) {
  return mesh::test::waitExit(mesh::test::spawnChild(argv, log, ""));
}

// n nodes enrolled in cluster `cluster`, put in transactions of kEtcdMaxTxnOps.
void enrollNodes(EtcdClient& etcd, const std::string& cluster, int n,
                 const mesh::trust::OperatorKey& key) {
  const FleetKeys keys{cluster};
  const auto nodeKey = mesh::trust::NodeKey::ephemeral();
  std::vector<EtcdOp> ops;
  for (int i = 0; i < n; ++i) {
    const std::string node = fmt::format("b-{:05}", i);
    ops.push_back(EtcdOp::put(enrollmentKey(keys, node),
                              encodeEnrollment(cluster, node, nodeKey.publicKey(), 1, key)));
    if (ops.size() == kEtcdMaxTxnOps || i == n - 1) {
      etcd.txn({}, ops);
      ops.clear();
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (sodium_init() < 0) return 1;
  std::vector<int> sizes = {100, 1000};
  int rounds = 7;
  std::string bin = MESH_HOST_BIN;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--nodes" && i + 1 < argc) {
      sizes = commaList(argv[++i]);
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::stoi(argv[++i]);
    } else if (a == "--mesh-host" && i + 1 < argc) {
      bin = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--nodes 100,1000] [--rounds 7] [--mesh-host BIN]\n",
                   argv[0]);
      return 2;
    }
  }
  char tmpl[] = "/tmp/mesh-bench-push-many.XXXXXX";
  const std::string base = ::mkdtemp(tmpl);
  const std::string etcdDir = base + "/etcd";
  int rc = 0;
  const std::string url =
      shellOut(fmt::format("ETCD_OWNER_PID={} {} start {}", ::getpid(), MESH_ETCD_SCRIPT, etcdDir));
  try {
    if (url.rfind("http://", 0) != 0) throw std::runtime_error("etcd did not start: " + url);
    auto key = mesh::trust::OperatorKey::generate();
    const std::string keyFile = base + "/ops.key";
    key.saveNew(keyFile);
    EtcdClient etcd(url);
    std::printf("fleet push: wall time of the push command, %s, %d rounds\n", bin.c_str(), rounds);
    std::vector<std::string> rows;
    for (int n : sizes) {
      const std::string cluster = fmt::format("bench{}", n);
      enrollNodes(etcd, cluster, n, key);
      std::vector<double> ms;
      for (int r = 1; r <= rounds; ++r) {
        const std::string decl = fmt::format("{}/decl-{}-{}.toml", base, n, r);
        std::ofstream(decl) << fmt::format(
            "serial = {}\n\n[module.bench.file.motd]\npath = \"/etc/motd\"\ncontent = \"round "
            "{}\"\n",
            r, r);
        const auto t0 = Clock::now();
        const int code = run({bin, "fleet", "push", "--etcd", url, "--cluster", cluster, "--key",
                              keyFile, "--nodes", "b-*", decl},
                             base + "/push.log");
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        if (code != 0)
          throw std::runtime_error(
              fmt::format("push to {} nodes exited {}: see {}/push.log", n, code, base));
        std::printf("  N=%d round %d: %.0f ms\n", n, r, ms.back());
        std::fflush(stdout);
      }
      rows.push_back(fmt::format("| {:>5} | {:>9.0f} | {:>6.0f} | {:>6.0f} |", n, median(ms),
                                 *std::min_element(ms.begin(), ms.end()),
                                 *std::max_element(ms.begin(), ms.end())));
    }
    std::printf(
        "\n| N     | median ms | min ms | max ms |\n| ----- | --------- | ------ | ------ |\n");
    for (const auto& r : rows) std::printf("%s\n", r.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mesh_bench_fleet_push_many: %s\n", e.what());
    rc = 1;
  }
  shellOut(fmt::format("{} stop {}", MESH_ETCD_SCRIPT, etcdDir));
  if (rc == 0) fs::remove_all(base);
  return rc;
}
