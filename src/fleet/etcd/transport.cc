#include "fleet/etcd/transport.hh"

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
  if (!token.empty()) list_ = curl_slist_append(list_, ("Authorization: " + token).c_str());
}

Headers::Headers(const std::string& token, Grpc) {
  list_ = curl_slist_append(nullptr, "Content-Type: application/grpc");
  list_ = curl_slist_append(list_, "TE: trailers");
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
