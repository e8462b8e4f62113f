#include "fleet/etcd/grpc_range.hh"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "fleet/etcd/grpc_codec.hh"
#include "fleet/etcd/transport.hh"

namespace mesh::fleet::etcd {

namespace {

// The grpc-status and grpc-message headers (or trailers: libcurl hands both to this).
struct Answer {
  explicit Answer(const EtcdClient::KvObserver* onKv) : body(onKv) {}
  RangeStream body;
  std::string status, message;
};

size_t onHeader(char* data, size_t size, size_t n, void* user) {
  auto& a = *static_cast<Answer*>(user);
  std::string_view line(data, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  const auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    auto value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (name == "grpc-status") a.status = value;
    if (name == "grpc-message") a.message = value;
  }
  return size * n;
}

size_t onBody(char* data, size_t size, size_t n, void* user) {
  static_cast<RangeStream*>(user)->feed(std::string_view(data, size * n));
  return size * n;
}

}  // namespace

GrpcRangeOutcome grpcRange(CURL* curl, const EtcdConfig& config, const std::string& token,
                           const std::string& key, const std::string& rangeEnd,
                           std::chrono::milliseconds timeout, const EtcdClient::KvObserver& onKv,
                           EtcdRange& out, std::uint64_t& clusterId, const std::string& what) {
  const std::string body = rangeRequest(key, rangeEnd);
  const std::string url = config.endpoint + "/etcdserverpb.KV/Range";
  Answer answer(&onKv);
  char errbuf[CURL_ERROR_SIZE] = {0};
  Headers headers(token, Headers::Grpc{});
  curl_easy_reset(curl);
  setRequest(curl, config, url, body, headers, errbuf);
  // A connection of its own each time: libcurl 7.88 fails a second call on an HTTP/2
  // connection it keeps (CURLE_HTTP2), and a range this large is no call to save a
  // connection on.
  curl_easy_setopt(curl, CURLOPT_FRESH_CONNECT, 1L);
  curl_easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);
  curl_easy_setopt(
      curl, CURLOPT_HTTP_VERSION,
      url.rfind("https://", 0) == 0 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
  setTimeouts(curl, timeout);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, onBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, onHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &answer);
  const CURLcode rc = curl_easy_perform(curl);
  if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
      rc == CURLE_OPERATION_TIMEDOUT)
    throwTransferFailed(curl, rc, errbuf, config.endpoint, what);
  long status = 0, version = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(curl, CURLINFO_HTTP_VERSION, &version);
  if (rc == CURLE_OK && status != 0 && version != CURL_HTTP_VERSION_2_0)
    return GrpcRangeOutcome::NoHttp2;
  if (rc != CURLE_OK || status != 200 || version != CURL_HTTP_VERSION_2_0 || answer.status != "0" ||
      !answer.body.whole())
    return GrpcRangeOutcome::NotServed;
  out = std::move(answer.body.out);
  clusterId = answer.body.clusterId;
  return GrpcRangeOutcome::Read;
}

}  // namespace mesh::fleet::etcd
