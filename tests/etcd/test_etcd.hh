// One real etcd per test process, for the tests that talk to etcd: started on first
// use by tests/etcd/etcd.sh (random loopback ports, fast raft timings, a dead-man
// switch on this process) and stopped after the last test.
#pragma once

#include <string>

namespace mesh::test {

struct TestEtcd {
  std::string url;         // http://127.0.0.1:PORT
  std::string dir;         // etcd.sh's DIR: `etcd.sh pause|resume DIR` make an outage
  std::string skipReason;  // non-empty: /usr/bin/etcd is missing, skip
  std::string failure;     // non-empty: it would not start, fail
};

// Starts it on the first call; later calls return the same one.
const TestEtcd& testEtcd();

// The path of tests/etcd/etcd.sh.
const char* etcdScript();

// Runs a shell command; returns its stdout, and its wait status in *status.
std::string shellOutput(const std::string& command, int* status);

}  // namespace mesh::test
