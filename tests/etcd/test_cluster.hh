// A real three-member etcd cluster on loopback for the tests of fleet mode through member
// failures (tests/etcd/etcd.sh cluster mode: 50 ms heartbeat, 500 ms election, a dead-man
// switch on this process). Each TestCluster is a fresh cluster, stopped when destroyed.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace mesh::test {

class TestCluster {
 public:
  // Starts one; check skipReason (no /usr/bin/etcd) and failure (it would not start).
  static std::unique_ptr<TestCluster> start();
  // Each member in a network namespace of its own (etcd.sh ETCD_NETNS=1; root), so that
  // one can be isolated from its peers while its clients still reach it; skipReason says
  // why not when the kernel or the user cannot make them.
  static std::unique_ptr<TestCluster> startInNamespaces();
  ~TestCluster();
  TestCluster(const TestCluster&) = delete;
  TestCluster& operator=(const TestCluster&) = delete;

  std::string urls;                 // "http://127.0.0.1:P1,http://127.0.0.1:P2,http://…:P3"
  std::vector<std::string> member;  // member[0] is member 1's URL
  std::string dir;
  std::string skipReason, failure;

  // Member n (1, 2 or 3): SIGKILL; SIGTERM; start again (healthy on return); SIGSTOP;
  // SIGCONT. Each fails the test (ADD_FAILURE) when etcd.sh does.
  void kill(int n);
  void stop(int n);
  void restart(int n);
  void pause(int n);
  void resume(int n);
  // (startInNamespaces) member n cut off from its peers, and back.
  void isolate(int n);
  void heal(int n);
  // The member that leads now (1..3; waits for one), 0 when etcd.sh finds none.
  int leader();
  // The member (1..3) a client URL belongs to; 0 for none.
  int memberOf(const std::string& url) const;

 private:
  TestCluster() = default;
  static std::unique_ptr<TestCluster> startWith(const std::string& env);
  std::string run(const std::string& verb, int n);
};

}  // namespace mesh::test
