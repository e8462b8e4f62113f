// fleet serve's HTTP server, in a module of its own (mesh-host-http.so, loaded by
// `fleet serve` only): the HTTP library it uses is built with TLS, and loading it
// initialises OpenSSL — ~3.5 MiB resident and a millisecond that every other
// command and the agent would pay at each start.
//
// The module knows HTTP and nothing of mesh-host: what it answers comes from the
// callbacks below. Both sides are built from this tree with the same compiler.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mesh::cli::http {

struct Response {
  int status = 200;
  std::string contentType;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

struct Routes {
  // Before any route: a response here answers the request instead (nullopt: go on).
  // Its argument is the request's Host header.
  std::function<std::optional<Response>(const std::string& host)> screen;
  // GET paths answered with one response.
  std::vector<std::pair<std::string, std::function<Response()>>> get;
  // GET paths answered from the request's query parameters (name → value, the first
  // of a name given twice).
  using Query = std::map<std::string, std::string>;
  std::vector<std::pair<std::string, std::function<Response(const Query&)>>> getQuery;
  // GET paths answered with a stream: the response's headers, then each chunk
  // `next` returns until it returns nullopt (or the client goes). A chunk is parts
  // written in order, shared rather than copied (the same large text goes to every
  // client: each holds a reference, and at most kStreamSliceBytes of it is copied at a
  // time for its socket).
  using Parts = std::vector<std::shared_ptr<const std::string>>;
  static constexpr size_t kStreamSliceBytes = 64 * 1024;
  struct Stream {
    std::string contentType;
    std::vector<std::pair<std::string, std::string>> headers;
    std::function<std::function<std::optional<Parts>()>()> open;  // one `next` per client
  };
  std::vector<std::pair<std::string, Stream>> streams;
  int threads = 8;              // clients served at once
  int keepAliveTimeoutSec = 1;  // an idle connection does not hold up a stop
  // A client whose socket takes nothing for this long is dropped (a reader that stopped
  // reading holds a thread and what it was being sent); `dropped` then hears of it.
  int writeTimeoutSec = 5;
  std::function<void()> dropped;
};

class Server {
 public:
  virtual ~Server() = default;
  // Binds `host`:`port` (0: any free port); returns the port, or -1 when it cannot.
  virtual int bind(const std::string& host, int port) = 0;
  // Serves until stop(); false when serving failed.
  virtual bool listen() = 0;
  virtual void stop() = 0;
};

// Loads the module, installed beside the binary (<bindir>/../lib/mesh-host/
// mesh-host-http.so), and makes a server; throws mesh::Error when it cannot.
std::unique_ptr<Server> makeServer(Routes routes);

}  // namespace mesh::cli::http

// The module's one entry point.
extern "C" mesh::cli::http::Server* mesh_http_server_new(mesh::cli::http::Routes* routes);
