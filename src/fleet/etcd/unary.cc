#include "fleet/etcd/unary.hh"

#include <curl/curl.h>
#include <fmt/format.h>

#include <utility>

#include "fleet/etcd/auth.hh"
#include "fleet/etcd/transport.hh"
#include "util/error.hh"
#include "util/text_safe.hh"

namespace mesh::fleet::etcd {

// etcd's words: "etcdserver: request is too large", "grpc: received message larger than
// max", "too many operations in txn request".
std::string limitHint(const std::string& message, std::size_t bytes) {
  if (message.find("request is too large") != std::string::npos ||
      message.find("larger than max") != std::string::npos)
    return fmt::format(
        "the request ({} bytes as sent) is over etcd's limit for one request "
        "(--max-request-bytes, {} bytes by default); store less in one value or transaction",
        bytes, kEtcdMaxRequestBytes);
  if (message.find("too many operations in txn") != std::string::npos)
    return fmt::format(
        "the transaction has more operations than etcd takes in one (--max-txn-ops, {} by "
        "default)",
        kEtcdMaxTxnOps);
  return {};
}

namespace {
CurlHandle& created(std::unique_ptr<CurlHandle>& handle) {
  if (!handle) handle = std::make_unique<CurlHandle>();
  return *handle;
}
}  // namespace

Unary::Unary(std::mutex& mutex, std::unique_ptr<CurlHandle>& handle, const EtcdConfig& config,
             std::string member, Auth* auth, std::chrono::milliseconds timeout, HeaderSeen onHeader)
    : lock_(mutex),
      handle_(created(handle)),
      config_(config),
      member_(std::move(member)),
      auth_(auth),
      timeout_(timeout),
      onHeader_(std::move(onHeader)) {}

json Unary::post(const std::string& path, const json& body, const std::string& what) {
  const std::string token = auth_ ? auth_->token(member_) : std::string();
  try {
    return postOnce(path, body, what, token);
  } catch (const AuthExpired&) {
    auth_->expire(token);
    return postOnce(path, body, what, auth_->token(member_));
  }
}

json Unary::postOnce(const std::string& path, const json& body, const std::string& what,
                     const std::string& token) {
  CURL* curl = handle_.get();
  const std::string text = jsonData(body);
  const std::string url = member_ + path;
  std::string answer;
  char errbuf[CURL_ERROR_SIZE] = {0};
  Headers headers(token);
  curl_easy_reset(curl);
  setRequest(curl, config_, url, text, headers, errbuf);
  setTimeouts(curl, timeout_);
  AnswerBudget budget;
  setAnswerBudget(curl, budget);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, appendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
  const CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) throwTransferFailed(curl, rc, errbuf, member_, what, &budget);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  json parsed = json::parse(answer, nullptr, false);
  if (status != 200) {
    lastCode_ = gatewayCode(parsed);
    const std::string message = gatewayMessage(answer);
    if (auth_ && isAuthExpired(lastCode_, message))
      throw AuthExpired("etcd {} failed: HTTP {} {}", what, status, message);
    if (auto limit = limitHint(message, text.size()); !limit.empty())
      throw Error("etcd {} failed: {}", what, limit);
    throwIfMemberFault(status, message, member_, what);
    throw Error("etcd {} failed: HTTP {} {}{}", what, status, message, authHint(message));
  }
  if (parsed.is_discarded() || !parsed.is_object())
    throw Error("etcd {} failed: unparsable response: {}", what, answer.substr(0, 200));
  if (parsed.contains("error")) {  // streamed endpoints (keepalive) answer 200 with an error
    lastCode_ = gatewayCode(parsed);
    const std::string message = gatewayMessage(parsed);
    if (auth_ && isAuthExpired(lastCode_, message))
      throw AuthExpired("etcd {} failed: {}", what, message);
    throwIfMemberFault(200, message, member_, what);
    throw Error("etcd {} failed: {}{}", what, message, authHint(message));
  }
  if (onHeader_) {  // keepalive wraps its answer in "result"
    const json& h = parsed.contains("result") ? parsed["result"] : parsed;
    if (auto it = h.find("header"); it != h.end()) onHeader_(*it);
  }
  return parsed;
}

}  // namespace mesh::fleet::etcd
