#include "fleet/etcd/auth.hh"

#include <curl/curl.h>

#include "fleet/etcd/gateway_codec.hh"
#include "fleet/etcd/transport.hh"
#include "util/text_safe.hh"

namespace mesh::fleet::etcd {

// "auth store is old": the token predates a change of users or roles.
bool isAuthExpired(std::int64_t code, const std::string& message) {
  return code == kGrpcUnauthenticated || message.find("invalid auth token") != std::string::npos ||
         message.find("revision of auth store is old") != std::string::npos;
}

// "user name is empty": no token was sent to an etcd with auth enabled.
std::string authHint(const std::string& message) {
  if (message.find("user name is empty") != std::string::npos ||
      message.find("permission denied") != std::string::npos)
    return " (etcd has auth enabled: give a user with access to /mesh/ with --etcd-user and "
           "--etcd-password-file)";
  return "";
}

std::string Auth::token(const std::string& member) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (token_.empty()) token_ = authenticate(member);
  return token_;
}

void Auth::expire(const std::string& used) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (token_ == used) token_.clear();
}

// On a connection of its own, so that no caller's handle or lock is involved.
std::string Auth::authenticate(const std::string& member) const {
  const std::string url = member + "/v3/auth/authenticate";
  const std::string body = jsonData(
      json{{"name", config_.user},
           {"password", config_.password ? std::string(config_.password->exposeForWrite()) : ""}});
  CurlHandle handle;
  std::string answer;
  char errbuf[CURL_ERROR_SIZE] = {0};
  Headers headers("");
  setRequest(handle.get(), config_, url, body, headers, errbuf);
  setTimeouts(handle.get(), std::chrono::milliseconds(5000));
  curl_easy_setopt(handle.get(), CURLOPT_WRITEFUNCTION, appendBody);
  curl_easy_setopt(handle.get(), CURLOPT_WRITEDATA, &answer);
  AnswerBudget budget;
  setAnswerBudget(handle.get(), budget);
  const CURLcode rc = curl_easy_perform(handle.get());
  const std::string what = "authentication as " + config_.user;
  if (rc != CURLE_OK) throwTransferFailed(handle.get(), rc, errbuf, member, what, &budget);
  long status = 0;
  curl_easy_getinfo(handle.get(), CURLINFO_RESPONSE_CODE, &status);
  const auto parsed = json::parse(answer, nullptr, false);
  const std::string token = str(parsed, "token");
  if (status != 200) throwIfMemberFault(status, gatewayMessage(answer), member, what);
  if (status != 200 || token.empty())
    throw Error(
        "etcd at {}: authentication as {} failed: {}; check --etcd-user and "
        "--etcd-password-file",
        member, config_.user,
        status == 200 ? "no token in the answer (is auth enabled in etcd?)"
                      : gatewayMessage(answer));
  return token;
}

}  // namespace mesh::fleet::etcd
