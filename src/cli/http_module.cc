// mesh-host-http.so: http_server.hh's server over cpp-httplib. Links nothing of
// mesh-host.
#include <httplib.h>

#include <algorithm>
#include <chrono>

#include "cli/http_server.hh"

namespace {

using mesh::cli::http::Response;
using mesh::cli::http::Routes;

void fill(httplib::Response& res, const Response& r) {
  res.status = r.status;
  for (const auto& [k, v] : r.headers) res.set_header(k, v);
  res.set_content(r.body, r.contentType);
}

class HttplibServer final : public mesh::cli::http::Server {
 public:
  explicit HttplibServer(Routes routes) : routes_(std::move(routes)) {
    const int threads = routes_.threads;
    server_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    server_.set_keep_alive_timeout(routes_.keepAliveTimeoutSec);
    server_.set_write_timeout(routes_.writeTimeoutSec);
    if (routes_.screen)
      server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        auto answer = routes_.screen(req.get_header_value("Host"));
        if (!answer) return httplib::Server::HandlerResponse::Unhandled;
        fill(res, *answer);
        return httplib::Server::HandlerResponse::Handled;
      });
    for (const auto& [path, handler] : routes_.get)
      server_.Get(path, [&handler = handler](const httplib::Request&, httplib::Response& res) {
        fill(res, handler());
      });
    for (const auto& [path, handler] : routes_.getQuery)
      server_.Get(path, [&handler = handler](const httplib::Request& req, httplib::Response& res) {
        Routes::Query query;
        for (const auto& [k, v] : req.params) query.emplace(k, v);
        fill(res, handler(query));
      });
    for (const auto& [path, stream] : routes_.streams)
      server_.Get(path, [this, &stream = stream](const httplib::Request&, httplib::Response& res) {
        for (const auto& [k, v] : stream.headers) res.set_header(k, v);
        auto next = std::make_shared<std::function<std::optional<Routes::Parts>()>>(stream.open());
        res.set_chunked_content_provider(
            stream.contentType, [this, next](size_t, httplib::DataSink& sink) {
              auto chunk = (*next)();
              if (!chunk) return false;
              // In slices: httplib copies what it is given into a chunk of its own.
              for (const auto& part : *chunk)
                for (size_t at = 0; part && at < part->size(); at += Routes::kStreamSliceBytes) {
                  const auto start = std::chrono::steady_clock::now();
                  if (sink.write(part->data() + at,
                                 std::min(Routes::kStreamSliceBytes, part->size() - at)))
                    continue;
                  // Failed after the whole write timeout: a reader that stopped reading (one
                  // that went away fails at once).
                  if (routes_.dropped && std::chrono::steady_clock::now() - start >=
                                             std::chrono::seconds(routes_.writeTimeoutSec))
                    routes_.dropped();
                  return false;
                }
              return true;
            });
      });
  }

  int bind(const std::string& host, int port) override {
    if (port == 0) return server_.bind_to_any_port(host);
    return server_.bind_to_port(host, port) ? port : -1;
  }
  bool listen() override { return server_.listen_after_bind(); }
  void stop() override { server_.stop(); }

 private:
  Routes routes_;  // the handlers refer to its elements: never changed after this
  httplib::Server server_;
};

}  // namespace

extern "C" mesh::cli::http::Server* mesh_http_server_new(mesh::cli::http::Routes* routes) {
  return new HttplibServer(std::move(*routes));
}
