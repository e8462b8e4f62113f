// Issue 31: `mesh-host seal --etcd URL --trust KEY --nodes LIST FILE` seals one value to
// every enrolled node the list matches, each with the key its enrollment holds, on a real
// etcd (nodes simulated: their enrollments and signed statuses as agents put them).
#include <fmt/format.h>

#include <fstream>

#include "fleet_fixture.hh"
#include "trust/sealed.hh"

namespace mesh::fleet::test {
namespace {

constexpr const char* kSecret = "fleet-seal-secret-31-q9";

class FleetSeal : public FleetTest {
 protected:
  void SetUp() override {
    FleetTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    secretFile = work + "/secret";
    std::ofstream(secretFile) << kSecret;
  }

  Result seal(const std::string& nodes, const std::string& trustKey = "") const {
    return runCommand({MESH_HOST_BIN, "seal", "--etcd", url, "--cluster", cluster, "--trust",
                       trustKey.empty() ? operatorKey.text() : trustKey, "--nodes", nodes,
                       secretFile});
  }

  static std::string valueOf(const Result& r) { return r.out.substr(0, r.out.find('\n')); }

  std::string secretFile;
};

TEST_F(FleetSeal, NodesPicksExactlyTheMatchingEnrolledNodes) {
  publish(nodeStatus("web-1", 0, std::nullopt), /*up=*/true);
  publish(nodeStatus("web-2", 0, std::nullopt), /*up=*/false);  // down: its seen copy only
  enroll("web-3");                                              // enrolled, never started
  publish(nodeStatus("db-1", 0, std::nullopt), /*up=*/true);    // does not match
  putDeclaration("web-9", 1);                                   // pushed to, never enrolled

  Result r = seal("web-*");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string v = valueOf(r);
  EXPECT_TRUE(v.starts_with("sealed:v2:3:")) << v;
  EXPECT_EQ(r.out.find(kSecret), std::string::npos);
  EXPECT_EQ(r.err.find(kSecret), std::string::npos);
  for (const char* n : {"web-1", "web-2", "web-3"}) {
    auto opened = trust::openSealedWith(nodeKey(n), v);
    ASSERT_TRUE(opened.secret) << n;
    EXPECT_EQ(opened.secret->exposeForWrite(), kSecret) << n;
  }
  EXPECT_EQ(trust::openSealedWith(nodeKey("db-1"), v).result,
            trust::OpenedSealed::Result::NotARecipient);
  EXPECT_NE(r.err.find("3 enrolled node(s) in cluster " + cluster + ": web-1, web-2, web-3"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("1 matched node(s) not enrolled, not recipients: web-9"), std::string::npos)
      << r.err;

  // Names and globs together, and --to beside them (one recipient however often named).
  const std::string extra = trust::NodeKey::ephemeral().publicKeyText();
  Result both = runCommand({MESH_HOST_BIN, "seal", "--etcd", url, "--cluster", cluster, "--trust",
                            operatorKey.text(), "--nodes", "db-1,web-1", "--to", extra, "--to",
                            nodeKey("web-1").publicKeyText(), secretFile});
  ASSERT_EQ(both.code, 0) << both.err;
  EXPECT_TRUE(valueOf(both).starts_with("sealed:v2:3:")) << both.out;
}

// A node whose signed status does not verify against its enrollment (it made a new key and
// was not enrolled again) is refused: a value sealed to the enrolled key would not open there.
TEST_F(FleetSeal, ANodeWhoseKeyDoesNotMatchItsEnrollmentIsRefused) {
  publish(nodeStatus("web-1", 0, std::nullopt), true);
  publish(nodeStatus("web-2", 0, std::nullopt), true);
  nodeKeys.erase("web-2");  // a new key, the enrollment left as it was
  publish(nodeStatus("web-2", 0, std::nullopt), true);

  Result r = seal("web-*");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "") << "nothing sealed";
  EXPECT_NE(r.err.find("node web-2: its key does not match its enrollment"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("node web-1"), std::string::npos) << r.err;

  // Enrollments signed by a key not trusted count for nothing: every node refused.
  const std::string other = work + "/other.key";
  ASSERT_EQ(runCommand({MESH_HOST_BIN, "key", "init", "--operator", other}).code, 0);
  Result show = runCommand({MESH_HOST_BIN, "key", "show", "--operator", other});
  Result untrusted = seal("web-1", show.out.substr(0, show.out.find('\n')));
  EXPECT_EQ(untrusted.code, 2) << untrusted.err;
  EXPECT_NE(untrusted.err.find("node web-1: its enrollment does not verify"), std::string::npos)
      << untrusted.err;
}

TEST_F(FleetSeal, BadSelectionsAreBadInput) {
  publish(nodeStatus("web-1", 0, std::nullopt), true);
  Result none = seal("db-*");
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("\"db-*\" matches no enrolled node"), std::string::npos) << none.err;
  Result named = seal("web-1,web-7");
  EXPECT_EQ(named.code, 2);
  EXPECT_NE(named.err.find("node web-7: not enrolled in cluster"), std::string::npos) << named.err;
  Result noEtcd = runCommand({MESH_HOST_BIN, "seal", "--nodes", "web-*", secretFile});
  EXPECT_EQ(noEtcd.code, 2);
  EXPECT_NE(noEtcd.err.find("give --etcd URL"), std::string::npos) << noEtcd.err;
  Result noTrust = runCommand(
      {MESH_HOST_BIN, "seal", "--etcd", url, "--cluster", cluster, "--nodes", "web-*", secretFile});
  EXPECT_EQ(noTrust.code, 2);
  EXPECT_NE(noTrust.err.find("--trust"), std::string::npos) << noTrust.err;
  Result nobody = runCommand({MESH_HOST_BIN, "seal", secretFile});
  EXPECT_EQ(nobody.code, 2);
  EXPECT_NE(nobody.err.find("--to KEY"), std::string::npos) << nobody.err;
}

}  // namespace
}  // namespace mesh::fleet::test
