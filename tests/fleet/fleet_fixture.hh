// The fleet commands against a real etcd: one etcd per test binary, the real mesh-host
// binary run as a subprocess, nodes simulated by putting their status JSON into etcd.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fleet/etcd.hh"
#include "fleet/protocol.hh"
#include "fleet/statement.hh"
#include "trust/node_key.hh"
#include "trust/operator_key.hh"

#include "../support/files.hh"

namespace mesh::fleet::test {

// A file's bytes, for every fleet test (tests/support/files.hh).
using ::mesh::test::slurp;

struct Result {
  int code = -1;
  std::string out, err;
  nlohmann::json json() const;  // stdout as JSON; fails the test when it is not
};

// A command running in the background, its output going to files.
struct Child {
  pid_t pid = -1;
  std::string dir;  // holds out and err
};
Child start(const std::vector<std::string>& argv);
Result finish(Child& child);  // waits for it
Result runCommand(const std::vector<std::string>& argv);

class FleetTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // The argv of `mesh-host fleet <sub> --etcd URL --cluster <this test's> <args…>`.
  std::vector<std::string> fleetArgv(const std::string& sub, std::vector<std::string> args) const;
  // `mesh-host fleet push --key <ops key> <args…>` and `mesh-host fleet status <args…>`.
  Result push(std::vector<std::string> args) const;
  Result status(std::vector<std::string> args = {}) const;

  // Writes a declaration file and returns its path.
  std::string declare(const std::string& text, const std::string& name = "decl.toml") const;
  // A small valid declaration with this serial (and `extra` appended to its content).
  static std::string declText(int64_t serial, const std::string& extra = "");

  // A simulated node's status: on a lease (up, with a seen copy) or only seen (down).
  NodeStatus nodeStatus(const std::string& node, int64_t revision,
                        std::optional<int64_t> serial) const;
  // Signed with the node's key (nodeKey), which is enrolled first; a node that is up
  // has its status (naming the lease, unless `s` names one) and a heartbeat on `lease`,
  // as an agent puts them.
  void publish(const NodeStatus& s, bool up);
  // One simulated node in each state `fleet status` tells apart — conv, behind, down,
  // never (pushed to, never started), refusing, failing, churning — and the
  // revisions of their declarations.
  struct EveryState {
    int64_t conv = 0, behindEarlier = 0, behindLater = 0, refusing = 0, churning = 0;
  };
  EveryState publishEveryState();
  // A simulated node's key (made on first use) and its enrollment, signed by the test's
  // operator key, as `fleet enroll` puts it.
  const trust::NodeKey& nodeKey(const std::string& node);
  void enroll(const std::string& node);
  // Puts a pushed declaration of declText(serial) to `node` as `fleet push` would
  // (a statement for that node signed with this test's operator key); its revision.
  int64_t putDeclaration(const std::string& node, int64_t serial);
  // A statement as `fleet push` would sign it for `text` to `nodes` in this cluster.
  Statement statementFor(const std::string& text, std::vector<std::string> nodes,
                         int64_t serial) const;
  // The value of a declaration key: `st` signed with `key` (this test's when empty).
  std::string signedValue(const Statement& st, const std::string& text,
                          const std::string& key = "") const;
  // The value at `node`'s declaration key, with the declaration's bytes filled in from
  // where `fleet push` stores them once (FleetKeys::body).
  std::optional<PushedDeclaration> pushedTo(const std::string& node);
  std::optional<Statement> statementOf(const std::string& node);
  std::optional<int64_t> declarationRevision(const std::string& node);

  // The directory of this binary's etcd, for `etcd.sh pause|resume DIR` (an outage).
  static std::string etcdDir();

  std::string url;      // the etcd endpoint
  std::string cluster;  // this test's own: tests never see each other's keys
  FleetKeys keys;
  std::string work;     // a temp dir
  std::string keyFile;  // an operator key in it
  trust::OperatorPublicKey operatorKey;
  std::unique_ptr<EtcdClient> client;
  int64_t lease = 0;  // for the nodes that are up; revoked at the end
  std::map<std::string, trust::NodeKey> nodeKeys;
};

}  // namespace mesh::fleet::test
