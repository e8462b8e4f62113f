#include "fleet/etcd/transport.hh"

#include <fmt/format.h>
#include <sodium.h>

#include <algorithm>
#include <mutex>

#include "util/error.hh"

namespace mesh::fleet::etcd {

void initOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error("cannot initialise libcurl");
    if (sodium_init() < 0) throw Error("cannot initialise libsodium");
  });
}

CurlHandle::CurlHandle() : curl_(curl_easy_init()) {
  if (!curl_) throw Error("cannot create a libcurl handle");
}

CurlHandle::~CurlHandle() {
  curl_easy_cleanup(curl_);
}

Headers::Headers(const std::string& token) {
  list_ = curl_slist_append(nullptr, "Content-Type: application/json");
  list_ = curl_slist_append(list_, "Grpc-Metadata-Hasleader: true");
  if (!token.empty()) list_ = curl_slist_append(list_, ("Authorization: " + token).c_str());
}

Headers::Headers(const std::string& token, Grpc) {
  list_ = curl_slist_append(nullptr, "Content-Type: application/grpc");
  list_ = curl_slist_append(list_, "TE: trailers");
  list_ = curl_slist_append(list_, "hasleader: true");
  if (!token.empty()) list_ = curl_slist_append(list_, ("token: " + token).c_str());
}

Headers::~Headers() {
  curl_slist_free_all(list_);
}

void setRequest(CURL* curl, const EtcdConfig& config, const std::string& url,
                const std::string& body, const Headers& headers, char* errbuf) {
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  if (!config.caCert.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, config.caCert.c_str());
  if (!config.clientCert.empty())
    curl_easy_setopt(curl, CURLOPT_SSLCERT, config.clientCert.c_str());
  if (!config.clientKey.empty()) curl_easy_setopt(curl, CURLOPT_SSLKEY, config.clientKey.c_str());
  // A loopback etcd is never reached through $http_proxy; others follow curl's usual rules.
  for (const char* local : {"http://127.", "http://localhost", "http://[::1]", "https://127.",
                            "https://localhost", "https://[::1]"})
    if (url.rfind(local, 0) == 0) curl_easy_setopt(curl, CURLOPT_PROXY, "");
}

void setTimeouts(CURL* curl, std::chrono::milliseconds timeout) {
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::min(timeout, kConnectBudget).count()));
}

namespace {
int onAnswerProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto& b = *static_cast<AnswerBudget*>(user);
  long status = 0;
  curl_easy_getinfo(b.curl, CURLINFO_RESPONSE_CODE, &status);
  if (status != 0 || std::chrono::steady_clock::now() - b.start < kAnswerBudget) return 0;
  b.spent = true;
  return 1;
}
}  // namespace

void setAnswerBudget(CURL* curl, AnswerBudget& budget) {
  budget.curl = curl;
  budget.start = std::chrono::steady_clock::now();
  budget.spent = false;
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, onAnswerProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &budget);
}

void throwTransferFailed(CURL* curl, CURLcode rc, const char* errbuf, const std::string& member,
                         const std::string& what, const AnswerBudget* budget) {
  using Kind = EtcdMemberFailed::Kind;
  // Whether the request went out: a kept-alive connection has no connect time of its own.
  long sentBytes = 0;
  curl_easy_getinfo(curl, CURLINFO_REQUEST_SIZE, &sentBytes);
  if (rc == CURLE_ABORTED_BY_CALLBACK && budget && budget->spent) {
    if (sentBytes == 0)
      throw EtcdMemberFailed(
          Kind::Unreachable, member,
          fmt::format("etcd at {} unreachable: no connection in {} s (during {})", member,
                      kAnswerBudget.count() / 1000.0, what));
    throw EtcdMemberFailed(Kind::Hung, member,
                           fmt::format("etcd at {} hung: connected, no answer in {} s (during {})",
                                       member, kAnswerBudget.count() / 1000.0, what));
  }
  const std::string words = curlMessage(rc, errbuf);
  switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
      throw EtcdMemberFailed(
          Kind::Unreachable, member,
          fmt::format("etcd at {} unreachable: {} (during {})", member, words, what));
    case CURLE_OPERATION_TIMEDOUT: {
      long status = 0;
      double totalS = 0;
      curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
      curl_easy_getinfo(curl, CURLINFO_TOTAL_TIME, &totalS);
      if (sentBytes == 0)
        throw EtcdMemberFailed(
            Kind::Unreachable, member,
            fmt::format("etcd at {} unreachable: {} (during {})", member, words, what));
      throw EtcdMemberFailed(
          Kind::Hung, member,
          fmt::format("etcd at {} hung: connected, {} in {:.1f} s (during {})", member,
                      status == 0 ? "no answer" : "the answer stopped", totalS, what));
    }
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: {
      // Over TLS 1.3 a member that refuses the client's certificate says so only after
      // the handshake: the first read then finds the connection gone, nothing answered.
      long status = 0;
      curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
      const bool tlsRefusal = status == 0 && member.starts_with("https://");
      throw EtcdMemberFailed(
          Kind::Dropped, member,
          fmt::format("etcd at {} dropped the connection: {} (during {}){}", member, words, what,
                      tlsRefusal ? "; over TLS this is how a member refuses a client "
                                   "certificate: check --etcd-cert and --etcd-key"
                                 : ""));
    }
    default:
      throw Error("etcd at {} unreachable: {} (during {})", member, words, what);
  }
}

void throwIfMemberFault(long status, const std::string& message, const std::string& member,
                        const std::string& what) {
  using Kind = EtcdMemberFailed::Kind;
  if (message.find("no leader") != std::string::npos)
    throw EtcdMemberFailed(
        Kind::NoLeader, member,
        fmt::format("etcd at {} has no leader ({}; during {})", member, message, what));
  if (status >= 500)
    throw EtcdMemberFailed(
        Kind::ServerError, member,
        fmt::format("etcd {} failed at {}: HTTP {} {}", what, member, status, message));
}

std::string curlMessage(CURLcode rc, const char* errbuf) {
  std::string m = errbuf[0] ? std::string(errbuf) : std::string(curl_easy_strerror(rc));
  switch (rc) {
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
      return m +
             " (TLS: check the CA certificate, client certificate and key: --etcd-cacert, "
             "--etcd-cert, --etcd-key)";
    default:
      return m;
  }
}

std::size_t appendBody(char* data, std::size_t size, std::size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

}  // namespace mesh::fleet::etcd
