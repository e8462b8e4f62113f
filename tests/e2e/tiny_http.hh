// A tiny HTTP/1.1 server on loopback for the e2e tests that fetch blobs over HTTP.
#pragma once

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mesh::e2e {

struct Reply {
  int status = 200;
  std::string body;
  long contentLength = -1;  // -1: the body's size
  std::chrono::milliseconds delay{0};
  // The body sent again and again until the client goes (no Content-Length).
  bool endless = false;
  // A pause before each piece of the body; with it, the body goes a byte at a time.
  std::chrono::milliseconds drip{0};
};

// One thread accepting on 127.0.0.1:<ephemeral>, one thread per connection; answers
// GET <path> from a table, everything else with `fallback`. Stops (and cuts any delay
// short) when destroyed.
class TinyHttpServer {
 public:
  TinyHttpServer() {
    listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(listenFd_, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(::bind(listenFd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listenFd_, 16), 0);
    socklen_t len = sizeof addr;
    ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { acceptLoop(); });
  }
  ~TinyHttpServer() {
    stop_ = true;
    acceptor_.join();
    std::lock_guard lock(mu_);
    for (auto& t : connections_) t.join();
    ::close(listenFd_);
  }

  int port() const { return port_; }
  void serve(const std::string& path, Reply r) {
    std::lock_guard lock(mu_);
    table_[path] = std::move(r);
  }
  void failEverything() {
    std::lock_guard lock(mu_);
    table_.clear();
    fallback_ = Reply{500, "broken\n"};
  }
  int requests(const std::string& path) {
    std::lock_guard lock(mu_);
    return seen_[path];
  }
  int requests() {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& [_, count] : seen_) n += count;
    return n;
  }

 private:
  void acceptLoop() {
    while (!stop_) {
      pollfd p{listenFd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::lock_guard lock(mu_);
      if (connections_.size() >= 64) {  // bounded: a runaway client cannot exhaust the test
        ::close(fd);
        continue;
      }
      connections_.emplace_back([this, fd] { handle(fd); });
    }
  }

  void handle(int fd) {
    using namespace std::chrono_literals;
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string request;
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos && request.size() < 65536) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      request.append(buf, static_cast<size_t>(n));
    }
    // "GET /path HTTP/1.1"
    const auto sp1 = request.find(' '), sp2 = request.find(' ', sp1 + 1);
    const std::string path = sp1 == std::string::npos || sp2 == std::string::npos
                                 ? ""
                                 : request.substr(sp1 + 1, sp2 - sp1 - 1);
    Reply r;
    {
      std::lock_guard lock(mu_);
      ++seen_[path];
      auto it = table_.find(path);
      r = it != table_.end() ? it->second : fallback_;
    }
    for (auto waited = 0ms; waited < r.delay && !stop_; waited += 10ms)
      std::this_thread::sleep_for(10ms);
    const long length = r.contentLength >= 0 ? r.contentLength : long(r.body.size());
    const std::string head = fmt::format(
        "HTTP/1.1 {} X\r\n{}Content-Type: application/octet-stream\r\nConnection: "
        "close\r\n\r\n",
        r.status, r.endless ? "" : fmt::format("Content-Length: {}\r\n", length));
    auto sendAll = [&](std::string_view bytes) {
      return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size());
    };
    if (r.endless || r.drip > 0ms) {
      const std::string piece = r.body.empty() ? std::string(65536, 'x') : r.body;
      bool going = sendAll(head);
      do {
        for (size_t k = 0; going && k < piece.size() && !stop_;
             k += r.drip > 0ms ? 1 : piece.size()) {
          for (auto waited = 0ms; waited < r.drip && !stop_; waited += 10ms)
            std::this_thread::sleep_for(10ms);
          going = sendAll(std::string_view(piece).substr(k, r.drip > 0ms ? 1 : piece.size()));
        }
      } while (going && r.endless && !stop_);
    } else {
      const std::string response = head + r.body;
      ::send(fd, response.data(), response.size(), MSG_NOSIGNAL);
    }
    ::shutdown(fd, SHUT_WR);
    ::close(fd);
  }

  int listenFd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> connections_;
  std::map<std::string, Reply> table_;
  std::map<std::string, int> seen_;
  Reply fallback_{404, "no such thing\n"};
};

}  // namespace mesh::e2e
