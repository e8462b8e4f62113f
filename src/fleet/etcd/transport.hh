// The transport: one libcurl handle and how a request to etcd is set on it. Its rules:
// every request is a POST with a body; a request carries the JSON content type (or
// gRPC's, for the range read over HTTP/2) and the auth token when there is one; TLS
// files come from EtcdConfig; a loopback etcd is never reached through $http_proxy;
// a connection that cannot be made within kConnectBudget is "unreachable"; a TLS
// failure names the flags to check. What is sent and how the answer is read are the
// callers' (unary.hh, grpc_range.hh, watch.cc).
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <cstddef>
#include <string>

#include "fleet/etcd.hh"

namespace mesh::fleet::etcd {

// How long a connection to etcd may take before etcd counts as unreachable.
inline constexpr std::chrono::milliseconds kConnectBudget{3000};

// libcurl and libsodium (base64) initialised, once per process.
void initOnce();

// One libcurl easy handle; kept between calls, it keeps its connection alive.
class CurlHandle {
 public:
  CurlHandle();
  ~CurlHandle();
  CurlHandle(const CurlHandle&) = delete;
  CurlHandle& operator=(const CurlHandle&) = delete;
  CURL* get() const { return curl_; }

 private:
  CURL* curl_;
};

// One request's headers: JSON, the auth token when there is one, and the `hasleader`
// metadata (etcd's WithRequireLeader): a member without a leader refuses the call at once
// with 503 "etcdserver: no leader" rather than holding it until its own timeout, and ends
// a watch or keep-alive stream when it loses its leader.
class Headers {
 public:
  explicit Headers(const std::string& token);
  // A gRPC call's: etcd reads the token from the "token" metadata.
  struct Grpc {};
  Headers(const std::string& token, Grpc);
  ~Headers();
  Headers(const Headers&) = delete;
  Headers& operator=(const Headers&) = delete;
  curl_slist* get() const { return list_; }

 private:
  curl_slist* list_ = nullptr;
};

// Sets on `curl` a POST of `body` to `url` with `headers`, the TLS files of `config`,
// and `errbuf` (CURL_ERROR_SIZE) for libcurl's words; `body` and `headers` must outlive
// the transfer.
void setRequest(CURL* curl, const EtcdConfig& config, const std::string& url,
                const std::string& body, const Headers& headers, char* errbuf);

// The timeouts of a request that may take `timeout` in all.
void setTimeouts(CURL* curl, std::chrono::milliseconds timeout);

// A call's member counts as hung when its answer has not begun within kAnswerBudget:
// libcurl's progress callback (about once a second) ends the transfer, and
// throwTransferFailed says "hung". Set on `curl` with the budget starting now; `budget`
// must outlive the transfer.
struct AnswerBudget {
  CURL* curl = nullptr;
  std::chrono::steady_clock::time_point start;
  bool spent = false;  // the transfer was ended for it
};
void setAnswerBudget(CURL* curl, AnswerBudget& budget);

// libcurl's words for a failed transfer, with what to check for a TLS failure.
std::string curlMessage(CURLcode rc, const char* errbuf);

// Throws what a failed transfer (`rc`) to `member` during `what` says: EtcdMemberFailed
// when it is the member's — unreachable (no connection could be made), hung (connected,
// no answer in time), dropped (the connection ended early) — else an Error ("etcd at URL
// unreachable: ..."; TLS failures name the flags to check).
[[noreturn]] void throwTransferFailed(CURL* curl, CURLcode rc, const char* errbuf,
                                      const std::string& member, const std::string& what,
                                      const AnswerBudget* budget = nullptr);

// A non-200 answer from `member` that is the member's fault, not the request's: 503
// "etcdserver: no leader" (NoLeader) or any other 5xx (ServerError), thrown as
// EtcdMemberFailed with etcd's words; returns for any other answer.
void throwIfMemberFault(long status, const std::string& message, const std::string& member,
                        const std::string& what);

// A CURLOPT_WRITEFUNCTION that appends the body to the std::string in its user data.
std::size_t appendBody(char* data, std::size_t size, std::size_t n, void* user);

}  // namespace mesh::fleet::etcd
