#include "test_etcd.hh"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>

#ifndef MESH_ETCD_SCRIPT
#error "MESH_ETCD_SCRIPT must name tests/etcd/etcd.sh"
#endif

namespace mesh::test {

namespace {

TestEtcd& instance() {
  static TestEtcd etcd;
  return etcd;
}
bool started = false;

// Stops the etcd after the last test, if one was started.
class StopEtcd : public ::testing::Environment {
 public:
  void TearDown() override {
    if (instance().dir.empty()) return;
    int status = 0;
    shellOutput(std::string(MESH_ETCD_SCRIPT " stop ") + instance().dir + " 2>&1", &status);
  }
};
const auto* const registered = ::testing::AddGlobalTestEnvironment(new StopEtcd);

}  // namespace

const char* etcdScript() {
  return MESH_ETCD_SCRIPT;
}

std::string shellOutput(const std::string& command, int* status) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *status = ::pclose(p);
  return out;
}

const TestEtcd& testEtcd() {
  TestEtcd& e = instance();
  if (started) return e;
  started = true;
  if (::access("/usr/bin/etcd", X_OK) != 0) {
    e.skipReason =
        "/usr/bin/etcd is missing (apt-get install etcd-server; see scripts/install-deps)";
    return e;
  }
  char tmpl[] = "/tmp/mesh-test-etcd.XXXXXX";
  if (!::mkdtemp(tmpl)) {
    e.failure = "mkdtemp failed";
    return e;
  }
  e.dir = tmpl;  // etcd.sh stop (or its dead-man switch) removes it
  int status = 0;
  auto out = shellOutput("ETCD_OWNER_PID=" + std::to_string(::getpid()) +
                             " " MESH_ETCD_SCRIPT " start " + e.dir + " 2>&1",
                         &status);
  if (status != 0) {
    e.failure = "etcd.sh start failed: " + out;
    return e;
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  e.url = out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1);
  return e;
}

}  // namespace mesh::test
