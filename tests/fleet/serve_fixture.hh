// What the tests of `fleet serve` share: a real headless Chromium driven through
// /usr/bin/chromedriver (the W3C WebDriver protocol: JSON over HTTP, spoken here with
// libcurl), and a fixture that runs the real `mesh-host fleet serve` over the fixture's
// real etcd. serve_test.cc (the fleet page), serve_node_test.cc (a node's page).
#pragma once

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fleet/node_signed.hh"
#include "fleet_fixture.hh"
#include "util/base64.hh"

namespace mesh::fleet::test {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

inline constexpr const char* kChromedriver = "/usr/bin/chromedriver";
// How long the page may take to show a change. The goal is 1 s (measured and printed);
// the bound is looser so that a loaded CI machine does not make it flake.
inline constexpr auto kLiveBound = std::chrono::seconds(3);

struct HttpAnswer {
  long code = 0;
  std::string body;
};

inline size_t collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

inline HttpAnswer http(const std::string& method, const std::string& url,
                       const std::string& body = "", const std::vector<std::string>& headers = {}) {
  HttpAnswer a;
  CURL* curl = curl_easy_init();
  curl_slist* list = curl_slist_append(nullptr, "Content-Type: application/json");
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 60L);
  if (method == "POST") curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &a.body);
  if (curl_easy_perform(curl) == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &a.code);
  curl_slist_free_all(list);
  curl_easy_cleanup(curl);
  return a;
}

inline int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// Polls `ready` every 10 ms until it is true or `bound` has passed; returns how long it took,
// or nullopt.
template <class F>
inline std::optional<std::chrono::milliseconds> waitFor(F ready, std::chrono::milliseconds bound) {
  const auto start = Clock::now();
  while (Clock::now() - start < bound) {
    if (ready()) return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

// One chromedriver and one headless Chromium session for the whole suite.
class Browser {
 public:
  std::string skipReason, failure;

  void open(const std::string& dir) {
    if (::access(kChromedriver, X_OK) != 0) {
      (std::getenv("CI") ? failure : skipReason) =
          std::string(kChromedriver) + " is missing: scripts/install-deps installs chromium-driver";
      return;
    }
    port_ = freePort();
    driver_ = start({kChromedriver, fmt::format("--port={}", port_)});
    base_ = fmt::format("http://127.0.0.1:{}", port_);
    const auto up = waitFor(
        [&] {
          auto a = http("GET", base_ + "/status");
          return a.code == 200 && json::parse(a.body, nullptr, false)
                                      .value("value", json::object())
                                      .value("ready", false);
        },
        std::chrono::seconds(20));
    if (!up) {
      failure = "chromedriver did not answer /status within 20 s";
      return;
    }
    json args = {"--headless=new",          "--no-sandbox",
                 "--disable-gpu",           "--disable-dev-shm-usage",
                 "--window-size=1280,1500", "--user-data-dir=" + dir + "/chromium"};
    json options = {{"args", args}};
    if (::access("/usr/lib/chromium/chromium", X_OK) == 0)
      options["binary"] = "/usr/lib/chromium/chromium";
    const json caps = {
        {"capabilities",
         {{"alwaysMatch", {{"browserName", "chrome"}, {"goog:chromeOptions", options}}}}}};
    auto a = http("POST", base_ + "/session", caps.dump());
    const auto answer = json::parse(a.body, nullptr, false);
    if (a.code != 200 || answer.is_discarded()) {
      failure = "no WebDriver session: " + a.body;
      return;
    }
    session_ = base_ + "/session/" + answer.at("value").at("sessionId").get<std::string>();
  }

  void close() {
    if (!session_.empty()) http("DELETE", session_);
    session_.clear();
    if (driver_.pid > 0) {
      ::kill(driver_.pid, SIGTERM);
      finish(driver_);
      driver_.pid = -1;
    }
  }

  json command(const std::string& method, const std::string& path,
               const json& body = json::object()) {
    auto a = http(method, session_ + path, method == "POST" ? body.dump() : "");
    auto j = json::parse(a.body, nullptr, false);
    EXPECT_EQ(a.code, 200) << path << ": " << a.body;
    return j.is_discarded() ? json() : j.value("value", json());
  }
  void go(const std::string& url) { command("POST", "/url", {{"url", url}}); }
  // Runs `script` (a function body) in the page and returns what it returns.
  json run(const std::string& script) {
    return command("POST", "/execute/sync", {{"script", script}, {"args", json::array()}});
  }
  std::string screenshotPng() {
    return base64Decode(command("GET", "/screenshot").get<std::string>()).value_or("");
  }

 private:
  int port_ = 0;
  Child driver_;
  std::string base_, session_;
};

inline Browser& browser() {
  static Browser b;
  return b;
}

class FleetServe : public FleetTest {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/mesh-fleet-browser.XXXXXX";
    browserDir_ = ::mkdtemp(tmpl);
    browser().open(browserDir_);
  }
  static void TearDownTestSuite() {
    browser().close();
    fs::remove_all(browserDir_);
  }

  void SetUp() override {
    FleetTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!browser().skipReason.empty()) GTEST_SKIP() << browser().skipReason;
    ASSERT_TRUE(browser().failure.empty()) << browser().failure;
  }

  void TearDown() override {
    stopServe();
    FleetTest::TearDown();
  }

  // Starts `fleet serve` on a free loopback port (port 0: it prints which) and waits,
  // bounded, until it answers.
  void startServe() {
    serve_ = start(fleetArgv("serve", {"--trust", operatorKey.text(), "--listen", "127.0.0.1:0"}));
    std::string url;
    const auto ready = waitFor(
        [&] {
          const auto out = slurp(serve_.dir + "/out");
          const auto at = out.find("http://127.0.0.1:");
          if (at == std::string::npos) return false;
          url = out.substr(at, out.find('/', at + 7) + 1 - at);
          return http("GET", url + "api/fleet").code == 200;
        },
        std::chrono::seconds(10));
    ASSERT_TRUE(ready) << slurp(serve_.dir + "/err");
    page = url;
  }

  Result stopServe() {
    if (serve_.pid <= 0) return {};
    ::kill(serve_.pid, SIGTERM);
    Result r = finish(serve_);
    serve_.pid = -1;
    return r;
  }

  // A node that is up on a lease of its own, so that it alone can go down.
  int64_t publishOnOwnLease(const NodeStatus& s) {
    if (!client->get(enrollmentKey(keys, s.node))) enroll(s.node);
    const std::string text = signNodeJson(encodeStatus(s), nodeKey(s.node));
    const int64_t own = client->grantLease(60);
    client->put(keys.status(s.node), text, own);
    client->put(keys.seen(s.node), text);
    const Heartbeat h{s.node, cluster, s.pid, s.publishedAtMs};
    client->put(heartbeatKey(keys, s.node), signNodeJson(encodeHeartbeat(h), nodeKey(s.node)));
    return own;
  }

  // The page's view of the nodes: node → state, from the rows it draws.
  std::map<std::string, std::string> states() {
    std::map<std::string, std::string> out;
    const auto rows = browser().run(
        "return Array.from(document.querySelectorAll('tr[data-node]'))"
        ".map(r => [r.dataset.node, r.dataset.state]);");
    for (const auto& r : rows) out[r.at(0)] = r.at(1);
    return out;
  }
  std::string rolloutSerial() {
    return browser().run("return document.getElementById('rollout').dataset.serial || '';");
  }

  pid_t servePid() const { return serve_.pid; }
  const std::string& serveDir() const { return serve_.dir; }

  std::string page;
  static inline std::string browserDir_;

 private:
  Child serve_;
};

}  // namespace mesh::fleet::test
