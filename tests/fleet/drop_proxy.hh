// A TCP proxy on loopback in front of one etcd member that loses the answers to
// transactions: a request to /v3/kv/txn is passed on whole, the member's answer is awaited
// (so the transaction is applied) and then the client's connection is closed without it —
// what a client sees when its member dies right after it committed. Every other request
// is relayed both ways untouched. For tests of the client's judging by keys.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mesh::fleet::test {

class DropProxy {
 public:
  // In front of `upstream`, "http://127.0.0.1:PORT".
  explicit DropProxy(const std::string& upstream)
      : upstreamPort_(std::atoi(upstream.substr(upstream.rfind(':') + 1).c_str())) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listener_, 16);
    socklen_t len = sizeof a;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
    url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    acceptor_ = std::thread([this] { acceptLoop(); });
  }
  ~DropProxy() {
    stop_ = true;
    acceptor_.join();
    for (auto& t : relays_) t.join();
    ::close(listener_);
  }
  DropProxy(const DropProxy&) = delete;
  DropProxy& operator=(const DropProxy&) = delete;

  std::string url;
  // Transactions whose answer the member gave and the proxy dropped.
  std::atomic<int> dropped{0};

 private:
  // Waits up to `ms` for `fd` to be readable; false on timeout or when stopping.
  bool readable(int fd, int ms) {
    for (int waited = 0; waited < ms && !stop_; waited += 100) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) return true;
    }
    return false;
  }

  void acceptLoop() {
    while (!stop_) {
      if (!readable(listener_, 100)) continue;
      const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      std::lock_guard<std::mutex> lock(mutex_);
      relays_.emplace_back([this, client] { relay(client); });
    }
  }

  int connectUpstream() const {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(upstreamPort_));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }

  // The first request decides: a transaction is passed on and its answer dropped; anything
  // else makes the connection a plain relay.
  void relay(int client) {
    std::string request;
    char buf[65536];
    while (request.find("\r\n\r\n") == std::string::npos && readable(client, 5000)) {
      const ssize_t n = ::read(client, buf, sizeof buf);
      if (n <= 0) break;
      request.append(buf, static_cast<size_t>(n));
    }
    const int upstream = connectUpstream();
    if (upstream < 0 || request.empty()) {
      if (upstream >= 0) ::close(upstream);
      ::close(client);
      return;
    }
    const bool txn = request.starts_with("POST /v3/kv/txn ");
    if (txn) {
      // The whole body (Content-Length), then the member's answer, awaited and dropped.
      const auto headerEnd = request.find("\r\n\r\n") + 4;
      std::size_t length = 0;
      for (const char* name : {"Content-Length: ", "content-length: "})
        if (auto at = request.find(name); at != std::string::npos)
          length = std::strtoul(request.c_str() + at + std::string(name).size(), nullptr, 10);
      while (request.size() < headerEnd + length && readable(client, 5000)) {
        const ssize_t n = ::read(client, buf, sizeof buf);
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      (void)!::write(upstream, request.data(), request.size());
      if (readable(upstream, 5000) && ::read(upstream, buf, sizeof buf) > 0) ++dropped;
      ::close(upstream);
      ::close(client);
      return;
    }
    (void)!::write(upstream, request.data(), request.size());
    while (!stop_) {
      pollfd p[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
      if (::poll(p, 2, 100) <= 0) continue;
      bool closed = false;
      for (int i = 0; i < 2 && !closed; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const ssize_t n = ::read(p[i].fd, buf, sizeof buf);
        if (n <= 0 || ::write(p[1 - i].fd, buf, static_cast<size_t>(n)) != n) closed = true;
      }
      if (closed) break;
    }
    ::close(upstream);
    ::close(client);
  }

  int upstreamPort_;
  int listener_ = -1;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<std::thread> relays_;
  std::thread acceptor_;
};

}  // namespace mesh::fleet::test
