// Fleet mode against a secured etcd: one started with TLS and client certificates
// (--client-cert-auth), one with auth enabled (user and password), both made by
// tests/etcd/etcd.sh (ETCD_TLS=1, ETCD_AUTH=1; certificates made with openssl there). The
// etcd client alone, then the real agent and the fleet commands through each.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "../support/child.hh"
#include "fleet/etcd.hh"
#include "fleet_fixture.hh"
#include "test_etcd.hh"
#include "util/secret.hh"

namespace mesh::fleet::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool etcdInstalled() {
  return ::access("/usr/bin/etcd", X_OK) == 0;
}

// One etcd.sh etcd of a kind, shared by a test suite and stopped after it.
struct SecuredEtcd {
  SecuredEtcd(const char* env, bool tls) : env(env), tls(tls) {}

  const char* env;  // etcd.sh's switches for this kind
  bool tls;         // TLS with client certificates; otherwise auth with a user and password
  std::string dir, url, failure;

  // When etcd is installed; a failure to start is kept in `failure`.
  void start() {
    if (!etcdInstalled()) return;
    char tmpl[] = "/tmp/mesh-etcd-secured.XXXXXX";
    dir = std::string(::mkdtemp(tmpl)) + "/etcd";
    int status = 0;
    auto out =
        ::mesh::test::shellOutput(fmt::format("env ETCD_OWNER_PID={} {} {} start {} 2>&1",
                                              ::getpid(), env, ::mesh::test::etcdScript(), dir),
                                  &status);
    if (status != 0) {
      failure = "etcd.sh start failed: " + out;
      return;
    }
    url = trimmed(out.substr(out.rfind("http")));
    if (tls && !url.starts_with("https://")) failure = "not an https endpoint: " + url;
  }
  void stop() {
    if (dir.empty()) return;
    int status = 0;
    ::mesh::test::shellOutput(fmt::format("{} stop {} 2>&1", ::mesh::test::etcdScript(), dir),
                              &status);
    fs::remove_all(fs::path(dir).parent_path());
    dir.clear();
  }

  // The fleet commands' and the agent's options for it.
  std::vector<std::string> securityOptions() const {
    if (!tls) return {"--etcd-user", "mesh", "--etcd-password-file", dir + "/password"};
    const std::string t = dir + "/tls/";
    return {"--etcd-cacert",  t + "ca.pem", "--etcd-cert",
            t + "client.pem", "--etcd-key", t + "client.key"};
  }
};

// authEtcd's tokens last 1 s unused (--auth-token-ttl 1): every pause longer than that
// makes a client renew its token.
SecuredEtcd tlsEtcd{"ETCD_TLS=1", true}, authEtcd{"ETCD_AUTH=1 ETCD_AUTH_TOKEN_TTL=1", false};

// A test suite on `etcd`: started before its first test, stopped after its last.
template <SecuredEtcd& etcd, class Base>
class On : public Base {
 protected:
  static void SetUpTestSuite() { etcd.start(); }
  static void TearDownTestSuite() { etcd.stop(); }
};

// The etcd client alone against `etcd`.
template <SecuredEtcd& etcd>
class ClientOn : public On<etcd, ::testing::Test> {
 protected:
  void SetUp() override {
    if (!etcdInstalled()) GTEST_SKIP() << "/usr/bin/etcd is missing";
    ASSERT_TRUE(etcd.failure.empty()) << etcd.failure;
  }
};

// Lets an auth token's TTL pass: time passing is the point here, nothing to wait on.
void outliveTheToken() {
  std::this_thread::sleep_for(2500ms);
}

// The secured etcd's config for EtcdClient; `withClientCert` false leaves the client
// certificate out.
EtcdConfig tlsConfig(bool withClientCert = true, bool withCa = true) {
  EtcdConfig c;
  c.endpoint = tlsEtcd.url;
  if (withCa) c.caCert = tlsEtcd.dir + "/tls/ca.pem";
  if (withClientCert) {
    c.clientCert = tlsEtcd.dir + "/tls/client.pem";
    c.clientKey = tlsEtcd.dir + "/tls/client.key";
  }
  return c;
}

EtcdConfig authConfig(const std::string& password) {
  EtcdConfig c;
  c.endpoint = authEtcd.url;
  c.user = "mesh";
  c.password = std::make_shared<const Secret>(password);
  return c;
}

std::string authPassword() {
  return trimmed(slurp(authEtcd.dir + "/password"));
}

// Puts, reads back, and sees the put through a watch: what the agent does.
void roundTrip(EtcdClient& c, const std::string& key) {
  const auto rev = c.put(key, "v1");
  ASSERT_EQ(c.get(key)->value, "v1");
  bool seen = false;
  c.watch(
      key, rev,
      [&](const std::vector<EtcdEvent>& events) {
        seen = events.front().kv.value == "v1";
        return false;
      },
      5s);
  EXPECT_TRUE(seen);
  const auto lease = c.grantLease(5);
  EXPECT_GT(c.keepAliveOnce(lease), 0);
  EXPECT_TRUE(c.revoke(lease));
  // A prefix is read over etcd's gRPC API, through TLS and with the user's token alike.
  c.put(key + "/p", "in the prefix");
  const auto range = c.getPrefix(key + "/");
  ASSERT_EQ(range.kvs.size(), 1u);
  EXPECT_EQ(range.kvs[0].value, "in the prefix");
  EXPECT_EQ(c.grpcReads(), 1u);
}

using EtcdTls = ClientOn<tlsEtcd>;

TEST_F(EtcdTls, AClientWithTheCaAndACertificateTalksToIt) {
  EtcdClient c(tlsConfig());
  roundTrip(c, "/mesh/tls/a");
}

TEST_F(EtcdTls, WithoutAClientCertificateOrTheCaItIsRefusedSayingWhatToCheck) {
  EtcdClient noCert(tlsConfig(/*withClientCert=*/false));
  try {
    noCert.get("/mesh/tls/a");
    FAIL() << "etcd answered a client without a certificate";
  } catch (const Error& e) {
    // Refused after the handshake (TLS 1.3): the member drops the connection unanswered,
    // and the words say what to check.
    const std::string what = e.what();
    EXPECT_NE(what.find("etcd at " + tlsEtcd.url + " "), std::string::npos) << what;
    EXPECT_TRUE(what.find(" unreachable") != std::string::npos ||
                what.find(" dropped the connection") != std::string::npos)
        << what;
    EXPECT_NE(what.find("--etcd-cert"), std::string::npos) << what;
  }
  EtcdClient noCa(tlsConfig(true, /*withCa=*/false));
  try {
    noCa.get("/mesh/tls/a");
    FAIL() << "trusted a server certificate of an unknown CA";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--etcd-cacert"), std::string::npos) << e.what();
  }
}

using EtcdAuth = ClientOn<authEtcd>;

TEST_F(EtcdAuth, AUserWithItsPasswordTalksToIt) {
  EtcdClient c(authConfig(authPassword()));
  roundTrip(c, "/mesh/auth/a");
}

TEST_F(EtcdAuth, AWrongPasswordOrNoUserIsNamedWithWhatToDo) {
  EtcdClient wrong(authConfig("not-the-password"));
  try {
    wrong.get("/mesh/auth/a");
    FAIL() << "authenticated with a wrong password";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("authentication as mesh failed"), std::string::npos) << m;
    EXPECT_NE(m.find("--etcd-password-file"), std::string::npos) << m;
    EXPECT_EQ(m.find("not-the-password"), std::string::npos) << "the password was printed";
  }
  EtcdClient anonymous(authEtcd.url);
  try {
    anonymous.get("/mesh/auth/a");
    FAIL() << "read without a user";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("give a user"), std::string::npos) << e.what();
  }
  // A prefix read refused over gRPC is said as the gateway says it.
  try {
    anonymous.getPrefix("/mesh/auth/");
    FAIL() << "read a prefix without a user";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("give a user"), std::string::npos) << e.what();
  }
  EXPECT_EQ(anonymous.grpcReads(), 0u);
}

// A token etcd no longer takes (here: its TTL passed) is renewed once, for a unary call and
// for a watch alike.
TEST_F(EtcdAuth, AnExpiredTokenIsRenewedOnce) {
  EtcdClient c(authConfig(authPassword()));
  c.put("/mesh/auth/b", "before");
  outliveTheToken();
  const auto rev = c.put("/mesh/auth/b", "after");
  EXPECT_EQ(c.get("/mesh/auth/b")->value, "after");
  // A prefix read over gRPC with the old token is refused, then read through the gateway,
  // which renews the token; the next one goes over gRPC with the new token.
  outliveTheToken();
  ASSERT_EQ(c.getPrefix("/mesh/auth/b").kvs.size(), 1u);
  EXPECT_EQ(c.getPrefix("/mesh/auth/b").kvs.at(0).value, "after");
  EXPECT_GE(c.grpcReads(), 1u);
  outliveTheToken();
  bool seen = false;
  c.watch(
      "/mesh/auth/b", rev,
      [&](const std::vector<EtcdEvent>& events) {
        seen = events.front().kv.value == "after";
        return false;
      },
      5s);
  EXPECT_TRUE(seen);
}

// The agent and the fleet commands through a secured etcd: a node converges, its status is
// signed and verified, `fleet status` says converged.
class SecuredFleet : public FleetTest {
 protected:
  void TearDown() override {
    if (node > 0) {
      ::kill(node, SIGTERM);
      int status = 0;
      ::waitpid(node, &status, 0);
    }
    FleetTest::TearDown();
  }

  std::vector<std::string> fleet(const std::string& sub, std::vector<std::string> args) const {
    std::vector<std::string> argv = {MESH_HOST_BIN, "fleet",     sub,    "--etcd",
                                     endpoint,      "--cluster", cluster};
    argv.insert(argv.end(), security.begin(), security.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  void startNode() {
    root = work + "/n1";
    fs::create_directories(root);
    const std::string stateDir = root + "/var/lib/mesh-host";
    Result init =
        runCommand({MESH_HOST_BIN, "key", "init", "--root", root, "--state-dir", stateDir});
    ASSERT_EQ(init.code, 0) << init.err;
    Result enroll = runCommand(fleet("enroll", {"--key", keyFile, "n1", trimmed(init.out)}));
    ASSERT_EQ(enroll.code, 0) << enroll.out << enroll.err;
    std::vector<std::string> argv = {
        MESH_HOST_BIN, "run",     "--etcd",  endpoint,           "--cluster",
        cluster,       "--node",  "n1",      "--root",           root,
        "--state-dir", stateDir,  "--trust", operatorKey.text(), "--interval",
        "1s",          "--splay", "0",       "--supervisor",     "builtin"};
    argv.insert(argv.end(), security.begin(), security.end());
    log = work + "/n1.log";
    node = ::mesh::test::spawnChild(argv, log, "", ::mesh::test::Output::Append);
  }

  // Push, wait until the node applied it (push --wait), and check `fleet status`.
  void pushAndConverge() {
    const std::string decl = declare(
        "serial = 1\n\n[module.app.file.config]\npath = \"/etc/app.conf\"\ncontent = \"one\"\n");
    Result r = runCommand(fleet("push", {"--key", keyFile, "--node", "n1", "--wait", "30s", decl}));
    EXPECT_EQ(r.code, 0) << r.out << r.err << slurp(log);
    EXPECT_EQ(slurp(root + "/etc/app.conf"), "one");
    Result st = runCommand(fleet("status", {"--trust", operatorKey.text(), "--json"}));
    EXPECT_EQ(st.code, 0) << st.out << st.err << slurp(log);
    EXPECT_EQ(st.json().at("nodes").at(0).at("state"), "converged") << st.out;
  }

  std::string endpoint, root, log;
  std::vector<std::string> security;  // the TLS or auth options
  pid_t node = -1;
};

// The agent and the fleet commands through `etcd`, with its security options.
template <SecuredEtcd& etcd>
class SecuredFleetOn : public On<etcd, SecuredFleet> {
 protected:
  void SetUp() override {
    SecuredFleet::SetUp();
    if (this->IsSkipped() || this->HasFatalFailure()) return;
    ASSERT_TRUE(etcd.failure.empty()) << etcd.failure;
    this->endpoint = etcd.url;
    this->security = etcd.securityOptions();
  }
};

using SecuredFleetTls = SecuredFleetOn<tlsEtcd>;

TEST_F(SecuredFleetTls, ANodeConvergesThroughTlsWithClientCertificates) {
  startNode();
  pushAndConverge();
}

using SecuredFleetAuth = SecuredFleetOn<authEtcd>;

TEST_F(SecuredFleetAuth, ANodeConvergesAsAUserAndKeepsGoingAfterItsTokenIsGone) {
  startNode();
  pushAndConverge();
  // The node's token expires (and did between its heartbeats all along): it
  // authenticates again by itself.
  outliveTheToken();
  const std::string decl = declare(
      "serial = 2\n\n[module.app.file.config]\npath = \"/etc/app.conf\"\ncontent = \"two\"\n",
      "two.toml");
  Result r = runCommand(fleet("push", {"--key", keyFile, "--node", "n1", "--wait", "30s", decl}));
  EXPECT_EQ(r.code, 0) << r.out << r.err << slurp(log);
  EXPECT_EQ(slurp(root + "/etc/app.conf"), "two");
}

TEST_F(SecuredFleetAuth, BadSecurityOptionsAreBadInput) {
  const std::string loose = work + "/loose-password";
  std::ofstream(loose) << authPassword() << "\n";
  ::chmod(loose.c_str(), 0644);
  struct Case {
    std::vector<std::string> argv;
    std::string says;
  };
  const std::string pw = authEtcd.dir + "/password";
  for (const Case& c : std::vector<Case>{
           {{MESH_HOST_BIN, "fleet", "status", "--etcd", endpoint, "--etcd-user", "mesh", "--trust",
             operatorKey.text()},
            "--etcd-user and --etcd-password-file go together"},
           {{MESH_HOST_BIN, "fleet", "status", "--etcd", endpoint, "--etcd-user", "mesh",
             "--etcd-password-file", loose, "--trust", operatorKey.text()},
            "chmod"},
           {{MESH_HOST_BIN, "fleet", "status", "--etcd", endpoint, "--etcd-cacert", pw, "--trust",
             operatorKey.text()},
            "use an https:// endpoint"},
           {{MESH_HOST_BIN, "fleet", "status", "--etcd", "https://127.0.0.1:1", "--etcd-cert", pw,
             "--trust", operatorKey.text()},
            "--etcd-cert and --etcd-key go together"},
           {{MESH_HOST_BIN, "run", "--root", work, "--node", "n1", "--trust", operatorKey.text(),
             "--etcd-user", "mesh", "--etcd-password-file", pw},
            "are for fleet mode"},
       }) {
    Result r = runCommand(c.argv);
    EXPECT_EQ(r.code, 2) << c.says << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  // With them right, the user reads.
  Result ok = runCommand(fleet("status", {"--trust", operatorKey.text()}));
  EXPECT_EQ(ok.code, 0) << ok.err;
}

}  // namespace
}  // namespace mesh::fleet::test
