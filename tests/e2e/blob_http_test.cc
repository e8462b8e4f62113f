// Blobs over HTTP, through the real binary, from a tiny HTTP/1.1 server the test runs
// on loopback: a good blob is fetched, verified and cached (a second apply fetches
// nothing, even with the server failing); a corrupt, missing, slow or truncated one
// fails only the resource that needs it — nothing is written at its path, an
// unrelated file in the same declaration still converges, and the apply exits 1.
// Also `blob add FILE --to DIR`.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "harness.hh"
#include "tiny_http.hh"

namespace mesh::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::symlink_status(path, ec).type() != fs::file_type::not_found;
}

class BlobHttp : public Node {
 protected:
  void SetUp() override {
    Node::SetUp();
    server = std::make_unique<TinyHttpServer>();
    blobs = fmt::format("http://127.0.0.1:{}/store", server->port());  // every mesh() call
    // A proxy in the test's environment must not see loopback requests.
    extraEnv["no_proxy"] = "*";
    extraEnv["NO_PROXY"] = "*";
  }
  void TearDown() override {
    server.reset();
    Node::TearDown();
  }

  // Publishes `file` with `mesh-host blob add` into a local store; returns the digest.
  std::string blobAdd(const std::string& file) {
    Result r = runCommand({MESH_HOST_BIN, "blob", "add", file, "--to", work + "/store"});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(r.out.size(), 7u + 64 + 1) << r.out;
    return r.out.substr(0, r.out.find('\n'));
  }
  // Serves a published blob (or other bytes) at its place under /store.
  static std::string urlPath(const std::string& digest) {
    return "/store/sha256/" + digest.substr(7);
  }
  std::string cached(const std::string& digest) const {
    return stateDir() + "/blobs/sha256/" + digest.substr(7);
  }

  std::string withFileBlob(const std::string& digest) {
    return declare(fmt::format(R"(
[module.m.file.ok]
path = "/etc/m/ok"
content = "converges anyway\n"

[module.m.file.conf]
path = "/etc/m/conf"
blob = "{}"
)",
                               digest),
                   "decl-" + std::to_string(++decls) + ".toml");
  }

  // Applies a declaration whose m.conf blob the server will not hand over intact:
  // m.conf fails with `why` in its reason, m.ok is created, nothing lands at
  // /etc/m/conf or in the cache.
  void expectBlobFails(const std::string& digest, const std::string& why,
                       const std::map<std::string, std::string>& env = {}) {
    Result r = mesh({"apply", withFileBlob(digest), "--json"}, env);
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    auto report = r.json();
    auto conf = outcomeOf(report, "m.conf");
    EXPECT_EQ(conf["outcome"], "failed") << conf.dump();
    const std::string reason = conf.value("reason", "") + " " + conf.value("detail", "");
    EXPECT_NE(reason.find(why), std::string::npos) << "no '" << why << "' in: " << conf.dump();
    EXPECT_NE(reason.find(digest), std::string::npos) << conf.dump();
    EXPECT_EQ(outcomeOf(report, "m.ok")["outcome"], "created") << r.out;
    EXPECT_EQ(report["summary"]["failed"], 1) << r.out;
    EXPECT_EQ(read("/etc/m/ok"), "converges anyway\n");
    EXPECT_FALSE(exists(at("/etc/m/conf"))) << "something was written at the blob's path";
    EXPECT_FALSE(exists(cached(digest))) << "a bad blob reached the cache";
    expectNoTempFiles();
  }

  void expectNoTempFiles() {
    const std::string cache = stateDir() + "/blobs";
    if (!exists(cache)) return;
    for (const auto& e : fs::recursive_directory_iterator(cache))
      EXPECT_EQ(e.path().filename().string().rfind(".tmp-", 0), std::string::npos) << e.path();
  }

  std::unique_ptr<TinyHttpServer> server;
  int decls = 0;
};

TEST_F(BlobHttp, GoodBlobsAreFetchedVerifiedCachedAndNotFetchedAgain) {
  const std::string bundle =
      blobAdd(makeArchive({{"bin/tool", "#!/bin/sh\necho good\n"}, {"README", "good\n"}},
                          "chmod 755 bin/tool && tar -cf out bin README"));
  const std::string confFile = work + "/conf";
  std::ofstream(confFile, std::ios::binary) << "listen = 7070\n";
  const std::string conf = blobAdd(confFile);
  server->serve(urlPath(bundle), {200, slurp(work + "/store/sha256/" + bundle.substr(7))});
  server->serve(urlPath(conf), {200, "listen = 7070\n"});

  const std::string decl = declare(fmt::format(R"(
[module.m.archive.app]
path = "/opt/app"
bundle = "{}"

[module.m.file.conf]
path = "/etc/m/conf"
blob = "{}"
)",
                                               bundle, conf));
  Result r = apply(decl);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto report = r.json();
  EXPECT_EQ(outcomeOf(report, "m.app")["outcome"], "created") << r.out;
  EXPECT_EQ(outcomeOf(report, "m.conf")["outcome"], "created") << r.out;
  EXPECT_EQ(read("/opt/app/README"), "good\n");
  EXPECT_EQ(read("/etc/m/conf"), "listen = 7070\n");
  EXPECT_EQ(slurp(cached(conf)), "listen = 7070\n");
  EXPECT_TRUE(exists(cached(bundle)));
  EXPECT_EQ(server->requests(urlPath(bundle)), 1);
  EXPECT_EQ(server->requests(urlPath(conf)), 1);
  expectNoTempFiles();

  // The server now fails everything: the node is as declared and needs nothing from it.
  server->failEverything();
  const int before = server->requests();
  r = apply(decl);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  report = r.json();
  EXPECT_EQ(outcomeOf(report, "m.app")["outcome"], "unchanged") << r.out;
  EXPECT_EQ(outcomeOf(report, "m.conf")["outcome"], "unchanged") << r.out;
  EXPECT_EQ(server->requests(), before) << "a blob was fetched again";

  // Drifted content is restored from the cache, still without the server.
  write("/etc/m/conf", "tampered\n");
  r = apply(decl);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(outcomeOf(r.json(), "m.conf")["outcome"], "updated") << r.out;
  EXPECT_EQ(read("/etc/m/conf"), "listen = 7070\n");
  EXPECT_EQ(server->requests(), before) << "a cached blob was fetched again";
}

TEST_F(BlobHttp, CorruptBlobFailsThatResourceOnly) {
  const std::string file = work + "/real";
  std::ofstream(file, std::ios::binary) << "the real bytes\n";
  const std::string digest = blobAdd(file);
  server->serve(urlPath(digest), {200, "other bytes\n"});
  expectBlobFails(digest, "is corrupt: its content hashes to sha256:");
  EXPECT_EQ(server->requests(urlPath(digest)), 1) << "a digest mismatch is not retried";
}

TEST_F(BlobHttp, MissingBlobFailsThatResourceOnly) {
  const std::string digest = "sha256:" + std::string(64, 'a');
  expectBlobFails(digest, fmt::format("not found at http://127.0.0.1:{}{} (HTTP 404)",
                                      server->port(), urlPath(digest)));
  EXPECT_EQ(server->requests(urlPath(digest)), 1) << "a 404 is not retried";
}

TEST_F(BlobHttp, SlowServerTimesOut) {
  const std::string file = work + "/real";
  std::ofstream(file, std::ios::binary) << "slow bytes\n";
  const std::string digest = blobAdd(file);
  server->serve(urlPath(digest), {200, "slow bytes\n", -1, 5s});
  const auto start = std::chrono::steady_clock::now();
  expectBlobFails(digest, "timed out after 1 s",
                  {{"MESH_HOST_HTTP_TIMEOUT", "1"}, {"MESH_HOST_HTTP_RETRIES", "1"}});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(server->requests(urlPath(digest)), 2) << "a timeout is retried";
}

// An endless body (no Content-Length) is cut off at the most a blob may be: it would
// otherwise fill <state-dir>/blobs before its digest is ever checked. Not retried (it
// would be endless again); its temp file is removed. (MESH_HOST_HTTP_TIMEOUT only
// bounds what a build without the cap writes.)
TEST_F(BlobHttp, AnEndlessBodyIsCutOffAtTheMostABlobMayBe) {
  const std::string digest = "sha256:" + std::string(64, 'e');
  Reply endless{200, ""};
  endless.endless = true;
  server->serve(urlPath(digest), endless);
  const auto start = std::chrono::steady_clock::now();
  expectBlobFails(digest, "is larger than 1048576 bytes, the most a blob may be",
                  {{"MESH_HOST_HTTP_MAX_BYTES", "1048576"}, {"MESH_HOST_HTTP_TIMEOUT", "3"}});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_EQ(server->requests(urlPath(digest)), 1) << "a body over the cap is not retried";
}

// A Content-Length above the cap (the default, 8 GiB) is refused before a byte is kept.
TEST_F(BlobHttp, ABodyAnnouncedLargerThanTheMostIsRefusedAtOnce) {
  const std::string digest = "sha256:" + std::string(64, 'f');
  server->serve(urlPath(digest), {200, "a few bytes", 10L << 30});
  expectBlobFails(digest, "the server announced 10737418240 bytes");
  EXPECT_EQ(server->requests(urlPath(digest)), 1);
}

// A body that drips a byte every 100 ms, for ever: the low-speed limit gives it up
// (here after 1 s instead of the default 30 s) and the temp file goes.
TEST_F(BlobHttp, ADrippingBodyTimesOut) {
  const std::string digest = "sha256:" + std::string(64, 'd');
  Reply drip{200, "x"};
  drip.endless = true;
  drip.drip = 100ms;
  server->serve(urlPath(digest), drip);
  const auto start = std::chrono::steady_clock::now();
  expectBlobFails(digest, "slower than 1024 bytes/s for 1 s",
                  {{"MESH_HOST_HTTP_LOW_SPEED_TIME", "1"}, {"MESH_HOST_HTTP_RETRIES", "0"}});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST_F(BlobHttp, TruncatedTransferFailsThatResourceOnly) {
  const std::string file = work + "/real";
  std::ofstream(file, std::ios::binary) << std::string(1000, 'x');
  const std::string digest = blobAdd(file);
  server->serve(urlPath(digest), {200, std::string(10, 'x'), 1000});
  expectBlobFails(digest, "cut short");
  EXPECT_EQ(server->requests(urlPath(digest)), 3) << "a truncated transfer is retried";
}

TEST_F(BlobHttp, ServerErrorIsRetriedThenFails) {
  const std::string digest = "sha256:" + std::string(64, 'b');
  server->serve(urlPath(digest), {503, "busy\n"});
  expectBlobFails(digest, "HTTP 503");
  EXPECT_EQ(server->requests(urlPath(digest)), 3);
}

TEST_F(BlobHttp, BlobAddPublishesByDigestAndIsIdempotent) {
  const std::string file = work + "/bundle";
  std::ofstream(file, std::ios::binary) << "some bundle bytes\n";
  const std::string digest = blobAdd(file);
  Result sum = runCommand({"sha256sum", file});
  ASSERT_EQ(sum.code, 0);
  EXPECT_EQ(digest, "sha256:" + sum.out.substr(0, 64));
  const std::string placed = work + "/store/sha256/" + digest.substr(7);
  EXPECT_EQ(slurp(placed), "some bundle bytes\n");

  EXPECT_EQ(blobAdd(file), digest);  // again: fine, same answer
  EXPECT_EQ(slurp(placed), "some bundle bytes\n");
  for (const auto& e : fs::directory_iterator(work + "/store/sha256"))
    EXPECT_EQ(e.path().filename().string(), digest.substr(7)) << "a leftover in the store";

  Result missing = runCommand({MESH_HOST_BIN, "blob", "add", work + "/nope", "--to", work + "/s"});
  EXPECT_NE(missing.code, 0);
  EXPECT_NE(missing.err.find(work + "/nope"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace mesh::e2e
