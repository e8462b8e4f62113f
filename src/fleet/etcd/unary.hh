// A unary call: one request through the gateway to one member and its whole answer, on the
// client's one kept-alive connection. Its rules: a failure that is the member's
// (unreachable, hung past kAnswerBudget, dropped, no leader, 5xx) is an EtcdMemberFailed,
// for the client to move on; the connection is held (the client's mutex) for as
// long as the call lives, so one client can be shared between threads; a 200 answer is
// parsed whole as JSON, and every answer's header is shown to the identity guard; a
// non-200 answer, or a 200 one holding an error (streamed endpoints such as keepalive),
// is a mesh::Error in etcd's words, with a hint for a limit or a missing user; a token
// etcd no longer takes is renewed and the request sent once more.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "fleet/etcd.hh"
#include "fleet/etcd/gateway_codec.hh"

namespace mesh::fleet::etcd {

class Auth;
class CurlHandle;

class Unary {
 public:
  using HeaderSeen = std::function<void(const json&)>;
  // Holds `handle` under `mutex` (creating the handle on first use) until destroyed; every
  // request goes to `member`.
  Unary(std::mutex& mutex, std::unique_ptr<CurlHandle>& handle, const EtcdConfig& config,
        std::string member, Auth* auth, std::chrono::milliseconds timeout, HeaderSeen onHeader);

  // POSTs body to endpoint+path; returns the parsed 200 answer or throws.
  json post(const std::string& path, const json& body, const std::string& what);
  // The gRPC code of the last error answer (-1 none).
  std::int64_t lastCode() const { return lastCode_; }

 private:
  json postOnce(const std::string& path, const json& body, const std::string& what,
                const std::string& token);
  std::unique_lock<std::mutex> lock_;
  CurlHandle& handle_;
  const EtcdConfig& config_;
  std::string member_;
  Auth* auth_;  // null without a user
  std::chrono::milliseconds timeout_;
  HeaderSeen onHeader_;
  std::int64_t lastCode_ = -1;
};

// etcd's refusals of a request over its limits, said in its own words: what limit, and
// what it means; "" for any other message.
std::string limitHint(const std::string& message, std::size_t bytes);

}  // namespace mesh::fleet::etcd
