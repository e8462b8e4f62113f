// The watch: one streamed POST /v3/watch to the member in use, on a connection of its own,
// held for as long as the watch runs. It is leader-required (transport.hh's `hasleader`):
// a member without a leader refuses it (503 "etcdserver: no leader"), and ends it when it
// loses its leader. A member that failed it — refused, ended, no answer to its creation in
// kAnswerBudget, unreachable — is an EtcdMemberFailed and hands over to the next member;
// a watch on a member another call of the same configuration left (the heartbeat's
// keep-alive found it hung) ends too, so that the watcher follows. Its rules: the gateway streams
// newline-delimited JSON objects; each batch of events goes to the callback, which ends the watch
// by returning false; a stream error or a canceled watch is a mesh::Error (EtcdCompacted for a
// compacted start revision, AuthExpired for a refused token, renewed once by watch()); every line's
// header is shown to the identity guard; a timeout is no failure unless etcd cannot be
// connected to within kConnectBudget; `cancel` ends a quiet watch through libcurl's
// progress callback. Nothing thrown crosses libcurl's C frames: it is kept and
// rethrown after the transfer.
#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <vector>

#include "fleet/etcd.hh"
#include "fleet/etcd/auth.hh"
#include "fleet/etcd/gateway_codec.hh"
#include "fleet/etcd/members.hh"
#include "fleet/etcd/transport.hh"
#include "util/text_safe.hh"

namespace mesh::fleet {

using namespace etcd;

namespace {

// The watch stream's state: splits the body into JSON lines and hands events on.
struct WatchStream {
  std::function<void(const json&)> onHeader;  // sees every stream line's header

  WatchStream(CURL* c, const std::string& w, const EtcdClient::WatchCallback& cb, std::int64_t from,
              std::string m)
      : curl(c), what(w), callback(cb), fromRevision(from), member(std::move(m)) {}

  CURL* curl;
  const std::string& what;
  const EtcdClient::WatchCallback& callback;
  std::int64_t fromRevision;
  std::string member;
  std::string buffer;        // bytes not yet ending in a newline
  std::string errorBody;     // a non-200 answer, kept whole
  bool stopped = false;      // the callback returned false
  std::exception_ptr error;  // thrown inside the write callback, rethrown after
  bool authed = false;       // a token was sent: an auth error means renew it

  void line(const std::string& text) {
    auto j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw Error("etcd {} failed: unparsable stream line: {}", what, text.substr(0, 200));
    if (j.contains("error")) {
      auto message = gatewayMessage(j);
      if (authed && isAuthExpired(gatewayCode(j), message))
        throw AuthExpired("etcd {} failed: {}", what, message);
      throwIfMemberFault(200, message, member, what);
      // A gRPC status (grpc_code, message, details) with no revision in it: 0, unknown.
      if (message.find("compacted") != std::string::npos)
        throw EtcdCompacted(
            fmt::format("etcd {} from revision {} failed: {}", what, fromRevision, message), 0);
      throw Error("etcd {} failed: {}", what, message);
    }
    const json& r = j["result"];
    if (onHeader && r.is_object())
      if (auto it = r.find("header"); it != r.end()) onHeader(*it);
    if (auto compacted = i64(r, "compact_revision"); compacted > 0)
      throw EtcdCompacted(fmt::format("etcd {} from revision {} failed: required revision has "
                                      "been compacted (oldest available: {})",
                                      what, fromRevision, compacted),
                          compacted);
    if (flag(r, "canceled")) {
      auto reason = str(r, "cancel_reason");
      // A watch created with a token etcd no longer takes is canceled at once, saying so
      // ("rpc error: code = Unauthenticated desc = etcdserver: invalid auth token").
      if (authed &&
          (reason.find("Unauthenticated") != std::string::npos || isAuthExpired(-1, reason)))
        throw AuthExpired("etcd {} canceled by the server: {}", what, reason);
      throw Error("etcd {} canceled by the server: {}", what,
                  reason.empty() ? "no reason" : reason);
    }
    std::vector<EtcdEvent> events;
    if (auto evs = r.find("events"); evs != r.end() && evs->is_array()) {
      for (const auto& e : *evs) {
        EtcdEvent ev;
        ev.type = str(e, "type") == "DELETE" ? EtcdEvent::Type::Delete : EtcdEvent::Type::Put;
        ev.kv = parseKv(e.value("kv", json::object()), what);
        events.push_back(std::move(ev));
      }
    }
    if (!events.empty() && !callback(events)) stopped = true;
  }

  size_t write(const char* data, size_t n) {
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
      errorBody.append(data, n);
      return n;
    }
    buffer.append(data, n);
    size_t start = 0;
    for (size_t nl; !stopped && (nl = buffer.find('\n', start)) != std::string::npos;
         start = nl + 1) {
      std::string text = buffer.substr(start, nl - start);
      if (text.find_first_not_of(" \r\t") != std::string::npos) line(text);
    }
    buffer.erase(0, start);
    return stopped ? 0 : n;  // 0 aborts the transfer
  }

  // libcurl calls it about once a second while the watch is quiet.
  struct Progress {
    const std::atomic<bool>* cancel = nullptr;
    CURL* curl = nullptr;
    const etcd::Members* members = nullptr;
    std::size_t member = 0;
    std::chrono::steady_clock::time_point start;
    bool hung = false;   // connected, and no answer to the watch's creation in kAnswerBudget
    bool moved = false;  // another call of this configuration left the member
  };
  // Non-zero aborts the transfer: the caller asked the watch to end, the member is hung,
  // or no longer the one in use.
  static int onProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto& p = *static_cast<Progress*>(user);
    if (p.cancel && p.cancel->load()) return 1;
    if (p.members->current() != p.member) {
      p.moved = true;
      return 1;
    }
    long status = 0;
    curl_off_t connectedUs = 0;
    curl_easy_getinfo(p.curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(p.curl, CURLINFO_CONNECT_TIME_T, &connectedUs);
    if (status == 0 && connectedUs > 0 &&
        std::chrono::steady_clock::now() - p.start > kAnswerBudget) {
      p.hung = true;
      return 1;
    }
    return 0;
  }

  static size_t onWrite(char* data, size_t size, size_t n, void* user) {
    auto* self = static_cast<WatchStream*>(user);
    try {
      return self->write(data, size * n);
    } catch (...) {
      self->error = std::current_exception();
      return 0;
    }
  }
};

}  // namespace

bool EtcdClient::watch(const std::string& keyOrPrefix, std::int64_t fromRevision,
                       const WatchCallback& callback, std::chrono::milliseconds timeout,
                       WatchScope scope, const std::atomic<bool>* cancel) {
  const std::size_t m = members_->current();
  try {
    const std::string token = auth_ ? auth_->token(members_->url(m)) : std::string();
    try {
      return watchOnce(keyOrPrefix, fromRevision, callback, timeout, scope, cancel, token);
    } catch (const AuthExpired&) {
      // Refused before any event was handed on: the stream sends no event before it is
      // created, and creating it is what checks the token.
      auth_->expire(token);
      return watchOnce(keyOrPrefix, fromRevision, callback, timeout, scope, cancel,
                       auth_->token(members_->url(m)));
    }
  } catch (const EtcdMemberFailed& e) {
    members_->failed(m, e.what());  // a no-op when the watch followed a move
    throw;
  }
}

bool EtcdClient::watchOnce(const std::string& keyOrPrefix, std::int64_t fromRevision,
                           const WatchCallback& callback, std::chrono::milliseconds timeout,
                           WatchScope scope, const std::atomic<bool>* cancel,
                           const std::string& token) {
  const std::string what =
      (scope == WatchScope::Prefix ? "watch prefix " : "watch ") + shown(keyOrPrefix);
  json create = {{"key", b64(keyOrPrefix)}};
  if (scope == WatchScope::Prefix) create["range_end"] = b64(prefixEnd(keyOrPrefix));
  if (fromRevision > 0) create["start_revision"] = std::to_string(fromRevision);
  const std::string body = jsonData(json{{"create_request", create}});
  const std::size_t m = members_->current();
  const std::string member = members_->url(m);
  const std::string url = member + "/v3/watch";

  CurlHandle handle;  // its own connection: a watch holds it for as long as it runs
  char errbuf[CURL_ERROR_SIZE] = {0};
  WatchStream stream{handle.get(), what, callback, fromRevision, member};
  stream.onHeader = [this](const json& h) { noteHeader(clusterIdOf(h), i64(h, "revision")); };
  stream.authed = !token.empty();
  Headers headers(token);
  setRequest(handle.get(), config_, url, body, headers, errbuf);
  setTimeouts(handle.get(), timeout);
  curl_easy_setopt(handle.get(), CURLOPT_WRITEFUNCTION, WatchStream::onWrite);
  curl_easy_setopt(handle.get(), CURLOPT_WRITEDATA, &stream);
  const auto start = std::chrono::steady_clock::now();
  WatchStream::Progress progress{cancel, handle.get(), members_.get(), m, start};
  curl_easy_setopt(handle.get(), CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(handle.get(), CURLOPT_XFERINFOFUNCTION, WatchStream::onProgress);
  curl_easy_setopt(handle.get(), CURLOPT_XFERINFODATA, &progress);
  CURLcode rc = curl_easy_perform(handle.get());

  if (stream.error) std::rethrow_exception(stream.error);
  if (stream.stopped || (cancel && cancel->load())) return true;
  using Kind = EtcdMemberFailed::Kind;
  if (progress.moved)
    throw EtcdMemberFailed(
        Kind::Dropped, member,
        fmt::format(
            "etcd at {} left for {} ({}); {} ends there", member, this->member(),
            members_->lastFailure(m).empty() ? "it failed another call" : members_->lastFailure(m),
            what));
  if (progress.hung)
    throw EtcdMemberFailed(Kind::Hung, member,
                           fmt::format("etcd at {} hung: connected, no answer in {} s (during {})",
                                       member, kAnswerBudget.count() / 1000.0, what));
  long status = 0;
  curl_easy_getinfo(handle.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status != 0 && status != 200) {
    const std::string message = gatewayMessage(stream.errorBody);
    if (stream.authed &&
        isAuthExpired(gatewayCode(json::parse(stream.errorBody, nullptr, false)), message))
      throw AuthExpired("etcd {} failed: HTTP {} {}", what, status, message);
    throwIfMemberFault(status, message, member, what);
    throw Error("etcd {} failed: HTTP {} {}{}", what, status, message, authHint(message));
  }
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    // The timeout may end before etcd's headers (status 0), or on a busy machine even
    // before a loopback connect completes; neither says etcd is away. Only a connection
    // that cannot be made within the connect budget does, so a connect cut short by a
    // timeout below the budget gets the rest of it here.
    curl_off_t connectedAfterUs = 0;
    curl_easy_getinfo(handle.get(), CURLINFO_CONNECT_TIME_T, &connectedAfterUs);
    if (status == 200 || connectedAfterUs > 0) return false;
    const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    if (spent < kConnectBudget) {
      errbuf[0] = '\0';
      curl_easy_setopt(handle.get(), CURLOPT_CONNECT_ONLY, 1L);
      curl_easy_setopt(handle.get(), CURLOPT_TIMEOUT_MS, 0L);
      curl_easy_setopt(handle.get(), CURLOPT_CONNECTTIMEOUT_MS,
                       static_cast<long>((kConnectBudget - spent).count()));
      rc = curl_easy_perform(handle.get());
      if (rc == CURLE_OK) return false;
      if (cancel && cancel->load()) return true;
    }
  }
  if (rc != CURLE_OK) {
    if (rc == CURLE_OPERATION_TIMEDOUT)  // the connect budget spent: nothing was sent
      throw EtcdMemberFailed(Kind::Unreachable, member,
                             fmt::format("etcd at {} unreachable: {} (during {})", member,
                                         curlMessage(rc, errbuf), what));
    throwTransferFailed(handle.get(), rc, errbuf, member, what);
  }
  throw EtcdMemberFailed(Kind::Dropped, member,
                         fmt::format("etcd at {} ended the {} stream (a member ends a "
                                     "leader-required watch when it loses its leader)",
                                     member, what));
}

}  // namespace mesh::fleet
