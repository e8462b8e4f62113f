// `mesh-host fleet serve`: one read-only page over HTTP that shows the fleet live. One etcd
// watch (fleet/feed.hh) feeds every browser through server-sent events; the judgement is
// `fleet status`'s (fleet/view.hh). Loopback only unless asked: the page shows every node
// of the cluster to whoever can reach it, and it has no login. docs/fleet.md.
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "cli/commands.hh"
#include "cli/fleet_common.hh"
#include "cli/http_server.hh"
#include "cli/serve_page.hh"
#include "fleet/feed.hh"
#include "fleet/node_detail.hh"
#include "util/clock.hh"
#include "util/error.hh"
#include "util/lazy/lazy_lib.hh"
#include "util/text_safe.hh"

namespace mesh::cli {

namespace {

struct ListenAddress {
  std::string host;  // as given, without brackets
  int port = 0;      // 0: any free port (the URL printed says which)
};

ListenAddress parseListen(const std::string& text) {
  ListenAddress a;
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw InputError("--listen {}: give HOST:PORT (127.0.0.1:8080, [::1]:8080)", text);
  a.host = text.substr(0, colon);
  if (a.host.size() > 2 && a.host.front() == '[' && a.host.back() == ']')
    a.host = a.host.substr(1, a.host.size() - 2);
  const std::string port = text.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 ||
      std::stoi(port) > 65535)
    throw InputError("--listen {}: the port must be a number from 0 to 65535", text);
  a.port = std::stoi(port);
  return a;
}

// 127.0.0.0/8, ::1 and "localhost": reachable from this machine only.
bool isLoopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

// The host of a Host header ("127.0.0.1:8080", "[::1]:8080", "localhost").
std::string hostOf(const std::string& header) {
  if (!header.empty() && header.front() == '[') {
    const auto end = header.find(']');
    return end == std::string::npos ? header : header.substr(1, end - 1);
  }
  return header.substr(0, header.find(':'));
}

std::string sseEvent(const char* name, const std::string& data) {
  return fmt::format("event: {}\ndata: {}\n\n", name, data);
}

std::shared_ptr<const std::string> text(std::string s) {
  return std::make_shared<const std::string>(std::move(s));
}

// The browsers' stream: the newest view at once, then every newer one as it comes (a
// client that reads slowly gets the newest when it is ready and skips the rest), an etcd
// error when it changes, and a comment every 15 s that keeps proxies from closing it.
// What a client is sent is bounded: the view is the feed's own text, shared by every
// client (never copied per client), and a client that takes nothing for the write
// timeout is dropped (its browser reconnects when it reads again).
std::function<std::optional<http::Routes::Parts>()> eventsFor(fleet::FleetFeed& feed) {
  struct Sent {
    uint64_t seq = 0;
    std::string etcdError;
    bool first = true;
  };
  return [&feed, sent = std::make_shared<Sent>()]() -> std::optional<http::Routes::Parts> {
    const auto snap = feed.waitNewer(sent->seq, std::chrono::seconds(15));
    if (feed.stopped()) return std::nullopt;  // shutting down: end the stream
    std::string head = sent->first ? "retry: 1000\n\n" : "";
    http::Routes::Parts out;
    if (snap.seq == sent->seq) {
      head += ": keep-alive\n\n";
    } else {
      if (sent->first || snap.etcdError != sent->etcdError)
        head += sseEvent("etcd", jsonOut(nlohmann::json{{"error", snap.etcdError}}));
      if (snap.json) {
        out = {text(head + "event: fleet\ndata: "), snap.json, text("\n\n")};
        head.clear();
      }
      sent->seq = snap.seq;
      sent->etcdError = snap.etcdError;
    }
    if (!head.empty()) out.push_back(text(std::move(head)));
    sent->first = false;
    return out;
  };
}

http::Response pageResponse(std::string html) {
  return http::Response{200,
                        "text/html; charset=utf-8",
                        std::move(html),
                        {{"Cache-Control", "no-store"},
                         {"Content-Security-Policy",
                          "default-src 'none'; script-src 'unsafe-inline'; style-src "
                          "'unsafe-inline'; connect-src 'self'; img-src 'self'"},
                         {"X-Content-Type-Options", "nosniff"}}};
}

// /api/node?name=NODE: one node's detail (fleet/node_detail.hh), read from etcd at each
// ask through one client (its calls one at a time).
class NodeReader {
 public:
  NodeReader(const fleet::EtcdConfig& config, fleet::FleetKeys keys,
             std::vector<trust::OperatorPublicKey> trusted)
      : etcd_(config), keys_(std::move(keys)), trusted_(std::move(trusted)) {}

  http::Response answer(const http::Routes::Query& q) {
    const auto it = q.find("name");
    const std::string node = it == q.end() ? "" : it->second;
    try {
      std::lock_guard lock(mutex_);
      return http::Response{200,
                            "application/json",
                            jsonOut(fleet::nodeDetail(etcd_, keys_, node, trusted_, unixNowMs())),
                            {{"Cache-Control", "no-store"}}};
    } catch (const InputError& e) {
      return http::Response{
          400, "application/json", jsonOut(nlohmann::json{{"error", e.what()}}), {}};
    } catch (const std::exception& e) {
      return http::Response{
          503,
          "application/json",
          jsonOut(nlohmann::json{{"error", "etcd cannot be read: " + std::string(e.what())}}),
          {{"Cache-Control", "no-store"}}};
    }
  }

 private:
  std::mutex mutex_;
  fleet::EtcdClient etcd_;
  fleet::FleetKeys keys_;
  std::vector<trust::OperatorPublicKey> trusted_;
};

// How long a browser's socket may take nothing before it is dropped: 10 s, or
// MESH_HOST_SERVE_WRITE_TIMEOUT seconds.
int writeTimeout() {
  const char* v = std::getenv("MESH_HOST_SERVE_WRITE_TIMEOUT");
  if (!v || !*v) return 10;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 1 || n > 3600)
    throw InputError("MESH_HOST_SERVE_WRITE_TIMEOUT={}: give seconds from 1 to 3600", v);
  return static_cast<int>(n);
}

}  // namespace

namespace http {

std::unique_ptr<Server> makeServer(Routes routes) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find mesh-host's own binary: {}", ec.message());
  const std::string module =
      (self.parent_path().parent_path() / "lib/mesh-host/mesh-host-http.so").string();
  auto* make = reinterpret_cast<decltype(&mesh_http_server_new)>(
      lazy::symbol(module.c_str(), "mesh_http_server_new"));
  return std::unique_ptr<Server>(make(&routes));
}

}  // namespace http

void FleetServeOptions::addTo(CLI::App& cmd) {
  cmd.add_option("--listen", listen,
                 "HOST:PORT to serve the page on (default 127.0.0.1:8080; port 0: any free one, "
                 "printed); an address other than loopback needs --listen-public")
      ->option_text("HOST:PORT")
      ->default_str("127.0.0.1:8080");
  cmd.add_flag("--listen-public", listenPublic,
               "allow a --listen address other than loopback: the page then shows every node of "
               "the cluster, without a login, to whoever reaches that address");
}

int runFleetServe(const FleetOptions& f, const FleetServeOptions& s) {
  const auto keys = keysOf(f);
  const auto trusted = f.trust.load();
  const auto address = parseListen(s.listen);
  if (!s.listenPublic && !isLoopback(address.host))
    throw InputError(
        "--listen {}: not a loopback address; the page shows every node of the cluster to "
        "whoever reaches it, without a login: give --listen-public to serve it there anyway",
        s.listen);
  const auto config = etcdConfigOf(f);

  // SIGINT and SIGTERM are taken by one thread (sigwait), so every thread started from
  // here on inherits them blocked.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGINT);
  sigaddset(&stopSignals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

  fleet::FleetFeed feed(config, keys, trusted);
  feed.start();  // an etcd that cannot be read at start is an error (exit 1)

  http::Routes routes;
  routes.threads = 32;  // 32 browsers at once
  routes.writeTimeoutSec = writeTimeout();
  routes.dropped = [timeout = routes.writeTimeoutSec] {
    std::fprintf(stderr,
                 "mesh-host: fleet serve: dropped an event stream whose reader took nothing for "
                 "%d s (MESH_HOST_SERVE_WRITE_TIMEOUT)\n",
                 timeout);
  };
  if (!s.listenPublic)
    // A page on loopback can still be reached by another site's script through DNS
    // rebinding: only a request addressed to a loopback name or address is answered.
    routes.screen = [](const std::string& host) -> std::optional<http::Response> {
      if (isLoopback(hostOf(host))) return std::nullopt;
      return http::Response{
          403, "text/plain", "mesh-host fleet serve answers loopback names only\n", {}};
    };
  routes.get.emplace_back("/", [] { return pageResponse(std::string(fleetPage())); });
  // A node's page: the node is in the URL (node?name=web1), so that a reload or a shared
  // link lands on it; its data comes from /api/node, read from etcd at each ask.
  routes.get.emplace_back("/node", [page = nodePage()] { return pageResponse(page); });
  auto reader = std::make_shared<NodeReader>(config, keys, trusted);
  routes.getQuery.emplace_back(
      "/api/node", [reader](const http::Routes::Query& q) { return reader->answer(q); });
  routes.get.emplace_back("/api/fleet", [&feed] {
    const auto snap = feed.latest();
    return http::Response{
        200, "application/json", snap.json ? *snap.json : "{}", {{"Cache-Control", "no-store"}}};
  });
  routes.streams.emplace_back("/events", http::Routes::Stream{"text/event-stream",
                                                              {{"Cache-Control", "no-store"}},
                                                              [&feed] { return eventsFor(feed); }});
  std::unique_ptr<http::Server> server;
  try {
    server = http::makeServer(std::move(routes));
  } catch (...) {
    feed.stop();
    throw;
  }

  int port = server->bind(address.host, address.port);
  if (port < 0) {
    feed.stop();
    throw Error("cannot listen on {}: the address is in use or not this machine's", s.listen);
  }
  const std::string shown =
      address.host.find(':') == std::string::npos ? address.host : "[" + address.host + "]";
  std::printf(
      "mesh-host: serving cluster %s on http://%s:%d/ (read-only; SIGINT or SIGTERM stops)\n",
      f.cluster.c_str(), shown.c_str(), port);
  std::fflush(stdout);

  std::thread stopper([&] {
    int signal = 0;
    sigwait(&stopSignals, &signal);
    feed.stop();  // ends every event stream
    server->stop();
  });
  const bool served = server->listen();
  if (!feed.stopped()) ::pthread_kill(stopper.native_handle(), SIGTERM);  // it ended by itself
  stopper.join();
  if (!served) throw Error("serving on {} failed", s.listen);
  std::fprintf(stderr, "mesh-host: fleet serve stopped\n");
  return kExitOk;
}

}  // namespace mesh::cli
