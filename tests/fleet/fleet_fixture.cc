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
#include "../support/child.hh"
#include "fleet/bodies.hh"
#include "fleet/enroll.hh"
#include "fleet/node_signed.hh"
#include "test_etcd.hh"
#include "trust/signing.hh"
#include "util/digest.hh"

#ifndef MESH_HOST_BIN
#error "MESH_HOST_BIN must name the mesh-host binary"
#endif

namespace mesh::fleet::test {

namespace fs = std::filesystem;

// Everything this binary starts carries the run's tag (tests/leftovers/processes.hh).
[[maybe_unused]] static const bool kTagged = ::mesh::test::tagTestRun(MESH_HOST_BIN);

namespace {

int64_t unixNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
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
  c.pid = ::mesh::test::spawnChild(argv, c.dir + "/out", c.dir + "/err");
  return c;
}

Result finish(Child& c) {
  Result r;
  r.code = ::mesh::test::waitExit(c.pid);
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
  // `fleet status` keeps what it verified under $XDG_CACHE_HOME: the test's own, so every
  // status after the first in a test runs with that memo (and none outlives the test).
  ::setenv("XDG_CACHE_HOME", (work + "/cache").c_str(), 1);
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
  args.insert(args.begin(), {"--trust", operatorKey.text()});
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
  if (serial) s.declarationDigest = Digest::ofBytes(declText(*serial)).str();
  s.revision = revision;
  s.cycle = 3;
  s.unchanged = 1;
  return s;
}

const trust::NodeKey& FleetTest::nodeKey(const std::string& node) {
  auto it = nodeKeys.find(node);
  if (it == nodeKeys.end()) it = nodeKeys.emplace(node, trust::NodeKey::ephemeral()).first;
  return it->second;
}

void FleetTest::enroll(const std::string& node) {
  client->put(enrollmentKey(keys, node),
              encodeEnrollment(cluster, node, nodeKey(node).publicKey(), unixNowMs(),
                               trust::OperatorKey::load(keyFile)));
}

void FleetTest::publish(const NodeStatus& s, bool up) {
  if (!client->get(enrollmentKey(keys, s.node))) enroll(s.node);
  if (up && !lease) lease = client->grantLease(60);
  NodeStatus named = s;
  if (up && !named.lease) named.lease = lease;
  const std::string text = signNodeJson(encodeStatus(named), nodeKey(s.node));
  if (up) {
    client->put(keys.status(s.node), text, lease);
    const Heartbeat h{s.node, cluster, s.pid, unixNowMs(), lease};
    client->put(heartbeatKey(keys, s.node), signNodeJson(encodeHeartbeat(h), nodeKey(s.node)),
                lease);
  }
  client->put(keys.seen(s.node), text);
}

FleetTest::EveryState FleetTest::publishEveryState() {
  EveryState revs;
  revs.conv = putDeclaration("conv", 6);
  publish(nodeStatus("conv", revs.conv, 6), true);

  revs.behindEarlier = putDeclaration("behind", 6);
  revs.behindLater = putDeclaration("behind", 7);
  publish(nodeStatus("behind", revs.behindEarlier, 6), true);

  const auto downRev = putDeclaration("down", 6);
  publish(nodeStatus("down", downRev, 6), false);
  putDeclaration("never", 6);  // pushed to, never started

  revs.refusing = putDeclaration("refusing", 7);
  auto refusing = nodeStatus("refusing", revs.refusing - 1, 6);
  refusing.refused =
      NodeStatus::Refusal{revs.refusing,
                          7,
                          "signed by mesh-op:xyz, not trusted",
                          1,
                          valueDigest(client->get(keys.declaration("refusing"))->value),
                          ""};
  publish(refusing, true);

  const auto failRev = putDeclaration("failing", 6);
  auto failing = nodeStatus("failing", failRev, 6);
  failing.failed = 1;
  failing.failing = {{"demo.config", "permission denied"}};
  publish(failing, true);

  revs.churning = putDeclaration("churning", 6);
  auto churning = nodeStatus("churning", revs.churning, 6);
  churning.churning = {"demo.runtime"};
  publish(churning, true);
  return revs;
}

int64_t FleetTest::putDeclaration(const std::string& node, int64_t serial) {
  const std::string text = declText(serial);
  return client->put(keys.declaration(node), signedValue(statementFor(text, {node}, serial), text));
}

Statement FleetTest::statementFor(const std::string& text, std::vector<std::string> nodes,
                                  int64_t serial) const {
  Statement st;
  st.cluster = cluster;
  st.selector.items = std::move(nodes);
  st.declarationDigest = Digest::ofBytes(text).str();
  st.serial = serial;
  st.pushedAtMs = 1;
  st.pushedBy = operatorKey.text();
  return st;
}

std::string FleetTest::signedValue(const Statement& st, const std::string& text,
                                   const std::string& key) const {
  const auto op = trust::OperatorKey::load(key.empty() ? keyFile : key);
  PushedDeclaration p;
  p.statement = encodeStatement(st);
  p.signature = trust::signatureText(op, p.statement);
  p.text = text;
  return encodePushed(p);
}

std::optional<Statement> FleetTest::statementOf(const std::string& node) {
  auto p = pushedTo(node);
  if (!p) return std::nullopt;
  return decodeStatement(p->statement, keys.declaration(node));
}

std::optional<PushedDeclaration> FleetTest::pushedTo(const std::string& node) {
  auto v = client->get(keys.declaration(node));
  if (!v) return std::nullopt;
  auto p = decodePushed(v->value, keys.declaration(node));
  if (p.text.empty())  // stored once by digest, as `fleet push` does: filled in here
    if (auto body = readBody(
            *client, keys, decodeStatement(p.statement, keys.declaration(node)).declarationDigest))
      p.text = std::move(*body);
  return p;
}

std::optional<int64_t> FleetTest::declarationRevision(const std::string& node) {
  auto v = client->get(keys.declaration(node));
  if (!v) return std::nullopt;
  return v->modRevision;
}

}  // namespace mesh::fleet::test
