#include "fleet_fixture.hh"

#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../leftovers/processes.hh"
#include "test_etcd.hh"

#ifndef MESH_HOST_BIN
#error "MESH_HOST_BIN must name the mesh-host binary"
#endif

namespace mesh::fleet::test {

namespace fs = std::filesystem;

// Everything this binary starts carries the run's tag (tests/leftovers/processes.hh).
[[maybe_unused]] static const bool kTagged = ::mesh::test::tagTestRun(MESH_HOST_BIN);

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

nlohmann::json Result::json() const {
  auto j = nlohmann::json::parse(out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON: " << out << "\nstderr: " << err;
  return j;
}

Child start(const std::vector<std::string>& argv) {
  char tmpl[] = "/tmp/mesh-fleet-out.XXXXXX";
  Child c;
  c.dir = ::mkdtemp(tmpl);
  const std::string outPath = c.dir + "/out", errPath = c.dir + "/err";
  c.pid = ::fork();
  if (c.pid == 0) {
    int out = ::open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(out, 1);
    ::dup2(err, 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  return c;
}

Result finish(Child& c) {
  int status = 0;
  ::waitpid(c.pid, &status, 0);
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(c.dir + "/out");
  r.err = slurp(c.dir + "/err");
  fs::remove_all(c.dir);
  return r;
}

Result runCommand(const std::vector<std::string>& argv) {
  Child c = start(argv);
  return finish(c);
}

std::string FleetTest::etcdDir() {
  return ::mesh::test::testEtcd().dir;
}

void FleetTest::SetUp() {
  ASSERT_GE(sodium_init(), 0);
  const auto& etcd = ::mesh::test::testEtcd();
  if (!etcd.skipReason.empty()) GTEST_SKIP() << etcd.skipReason;
  ASSERT_TRUE(etcd.failure.empty()) << etcd.failure;
  url = etcd.url;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  cluster = fmt::format("t-{}-{}", info->test_suite_name(), info->name());
  keys = FleetKeys{cluster};
  client = std::make_unique<EtcdClient>(url);
  char tmpl[] = "/tmp/mesh-fleet.XXXXXX";
  work = ::mkdtemp(tmpl);
  keyFile = work + "/ops.key";
  auto key = trust::OperatorKey::generate();
  key.saveNew(keyFile);
  operatorKey = key.publicKey();
}

void FleetTest::TearDown() {
  if (client && lease) client->revoke(lease);
  // Whatever the test left running in its directory (nodes, their supervisors and
  // services) ends here, also after a failed assertion.
  if (!work.empty()) {
    const auto killed = ::mesh::test::killProcessesUsing(work);
    if (!killed.empty()) {
      std::string list;
      for (const auto& k : killed) list += "\n  " + k;
      std::fprintf(stderr, "[fleet fixture] killed %zu process(es) left in %s:%s\n", killed.size(),
                   work.c_str(), list.c_str());
    }
  }
  if (!work.empty() && (!HasFailure() || !std::getenv("MESH_KEEP_TEST_DIRS"))) fs::remove_all(work);
}

std::vector<std::string> FleetTest::fleetArgv(const std::string& sub,
                                              std::vector<std::string> args) const {
  std::vector<std::string> argv = {MESH_HOST_BIN, "fleet",     sub,    "--etcd",
                                   url,           "--cluster", cluster};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

Result FleetTest::push(std::vector<std::string> args) const {
  args.insert(args.begin(), {"--key", keyFile});
  return runCommand(fleetArgv("push", std::move(args)));
}

Result FleetTest::status(std::vector<std::string> args) const {
  return runCommand(fleetArgv("status", std::move(args)));
}

std::string FleetTest::declare(const std::string& text, const std::string& name) const {
  const std::string path = work + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string FleetTest::declText(int64_t serial, const std::string& extra) {
  return "serial = " + std::to_string(serial) +
         "\n\n[module.demo.file.config]\npath = \"/etc/demo.conf\"\ncontent = \"hello" + extra +
         "\\n\"\n";
}

NodeStatus FleetTest::nodeStatus(const std::string& node, int64_t revision,
                                 std::optional<int64_t> serial) const {
  NodeStatus s;
  s.node = node;
  s.cluster = cluster;
  s.version = "0.1.0";
  s.pid = 4242;
  s.publishedAtMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
  s.intervalMs = 300000;
  s.generation = revision ? 1 : 0;
  s.serial = serial;
  s.revision = revision;
  s.cycle = 3;
  s.unchanged = 1;
  return s;
}

void FleetTest::publish(const NodeStatus& s, bool up) {
  if (up && !lease) lease = client->grantLease(60);
  if (up) client->put(keys.status(s.node), encodeStatus(s), lease);
  client->put(keys.seen(s.node), encodeStatus(s));
}

int64_t FleetTest::putDeclaration(const std::string& node, int64_t serial) {
  PushedDeclaration p;
  p.text = declText(serial);
  p.serial = serial;
  p.pushedAtMs = 1;
  p.pushedBy = operatorKey.text();
  return client->put(keys.declaration(node), encodePushed(p));
}

std::optional<PushedDeclaration> FleetTest::pushedTo(const std::string& node) {
  auto v = client->get(keys.declaration(node));
  if (!v) return std::nullopt;
  return decodePushed(v->value, keys.declaration(node));
}

std::optional<int64_t> FleetTest::declarationRevision(const std::string& node) {
  auto v = client->get(keys.declaration(node));
  if (!v) return std::nullopt;
  return v->modRevision;
}

}  // namespace mesh::fleet::test
