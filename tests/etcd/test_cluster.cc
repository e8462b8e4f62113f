#include "test_cluster.hh"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <sstream>

#include "test_etcd.hh"

namespace mesh::test {

namespace {
std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s.substr(s.rfind('\n') == std::string::npos ? 0 : s.rfind('\n') + 1);
}
}  // namespace

std::unique_ptr<TestCluster> TestCluster::start() {
  return startWith("");
}

std::unique_ptr<TestCluster> TestCluster::startInNamespaces() {
  if (::geteuid() != 0) {
    std::unique_ptr<TestCluster> c(new TestCluster);
    c->skipReason = "network namespaces and veth pairs need root";
    return c;
  }
  int status = 0;
  const auto out =
      shellOutput("ip netns add mh-probe-$$ 2>&1 && ip netns del mh-probe-$$", &status);
  if (status != 0) {
    std::unique_ptr<TestCluster> c(new TestCluster);
    c->skipReason = "the kernel refuses a network namespace: " + out;
    return c;
  }
  return startWith("ETCD_NETNS=1 ");
}

std::unique_ptr<TestCluster> TestCluster::startWith(const std::string& env) {
  std::unique_ptr<TestCluster> c(new TestCluster);
  if (::access("/usr/bin/etcd", X_OK) != 0) {
    c->skipReason =
        "/usr/bin/etcd is missing (apt-get install etcd-server; see scripts/install-deps)";
    return c;
  }
  char tmpl[] = "/tmp/mesh-test-cluster.XXXXXX";
  if (!::mkdtemp(tmpl)) {
    c->failure = "mkdtemp failed";
    return c;
  }
  c->dir = tmpl;
  int status = 0;
  const auto out = shellOutput(env + "ETCD_OWNER_PID=" + std::to_string(::getpid()) + " " +
                                   etcdScript() + " cluster-start " + c->dir + " 2>&1",
                               &status);
  if (status != 0) {
    c->failure = "etcd.sh cluster-start failed: " + out;
    return c;
  }
  c->urls = trimmed(out);
  std::stringstream list(c->urls);
  for (std::string one; std::getline(list, one, ',');) c->member.push_back(one);
  if (c->member.size() != 3) c->failure = "etcd.sh cluster-start printed " + out;
  return c;
}

TestCluster::~TestCluster() {
  if (dir.empty()) return;
  int status = 0;
  shellOutput(std::string(etcdScript()) + " cluster-stop " + dir + " 2>&1", &status);
}

void TestCluster::isolate(int n) {
  run("member-isolate", n);
}
void TestCluster::heal(int n) {
  run("member-heal", n);
}

std::string TestCluster::run(const std::string& verb, int n) {
  int status = 0;
  auto out = shellOutput(std::string(etcdScript()) + " " + verb + " " + dir +
                             (n > 0 ? " " + std::to_string(n) : std::string()) + " 2>&1",
                         &status);
  if (status != 0) ADD_FAILURE() << "etcd.sh " << verb << " " << n << ": " << out;
  return trimmed(out);
}

void TestCluster::kill(int n) {
  run("member-kill", n);
}
void TestCluster::stop(int n) {
  run("member-stop", n);
}
void TestCluster::restart(int n) {
  run("member-start", n);
}
void TestCluster::pause(int n) {
  run("member-pause", n);
}
void TestCluster::resume(int n) {
  run("member-resume", n);
}

int TestCluster::leader() {
  const auto out = run("leader", 0);
  return out.size() == 1 && out[0] >= '1' && out[0] <= '3' ? out[0] - '0' : 0;
}

int TestCluster::memberOf(const std::string& url) const {
  for (std::size_t i = 0; i < member.size(); ++i)
    if (member[i] == url) return static_cast<int>(i) + 1;
  return 0;
}

}  // namespace mesh::test
