#include "fleet/etcd.hh"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "fleet/etcd/auth.hh"
#include "fleet/etcd/gateway_codec.hh"
#include "fleet/etcd/grpc_range.hh"
#include "fleet/etcd/transport.hh"
#include "fleet/etcd/unary.hh"
#include "util/error.hh"
#include "util/text_safe.hh"

namespace mesh::fleet {

using namespace etcd;

namespace {}  // namespace

EtcdClient::EtcdClient(std::string endpoint, std::chrono::milliseconds requestTimeout)
    : EtcdClient(EtcdConfig{std::move(endpoint), {}, {}, {}, {}, {}}, requestTimeout) {}

EtcdClient::EtcdClient(EtcdConfig config, std::chrono::milliseconds requestTimeout)
    : config_(std::move(config)), requestTimeout_(requestTimeout) {
  while (!config_.endpoint.empty() && config_.endpoint.back() == '/') config_.endpoint.pop_back();
  endpoint_ = config_.endpoint;
  if (endpoint_.rfind("http://", 0) != 0 && endpoint_.rfind("https://", 0) != 0)
    throw InputError("etcd endpoint {}: expected http://HOST:PORT or https://HOST:PORT", endpoint_);
  if (!config_.user.empty()) auth_ = std::make_unique<Auth>(config_);
  initOnce();
}

EtcdClient::~EtcdClient() = default;

namespace {}  // namespace

etcd::Unary EtcdClient::unary() {
  return etcd::Unary(mutex_, handle_, config_, auth_.get(), requestTimeout_,
                     [this](const json& h) { noteHeader(clusterIdOf(h), i64(h, "revision")); });
}

std::int64_t EtcdClient::put(const std::string& key, const std::string& value,
                             std::int64_t leaseId) {
  auto call = unary();
  json body = {{"key", b64(key)}, {"value", b64(value)}};
  if (leaseId != 0) body["lease"] = std::to_string(leaseId);
  auto r = call.post("/v3/kv/put", body, "put " + shown(key));
  return i64(r["header"], "revision");
}

std::optional<EtcdValue> EtcdClient::get(const std::string& key) {
  auto call = unary();
  const std::string what = "get " + shown(key);
  auto r = call.post("/v3/kv/range", {{"key", b64(key)}}, what);
  auto kvs = r.find("kvs");
  if (kvs == r.end() || !kvs->is_array() || kvs->empty()) return std::nullopt;
  auto kv = parseKv(kvs->front(), what);
  return EtcdValue{std::move(kv.value), kv.modRevision};
}

EtcdRange EtcdClient::getPrefix(const std::string& prefix) {
  return getPrefix(prefix, {});
}

EtcdRange EtcdClient::getPrefix(const std::string& prefix, const KvObserver& onKv) {
  if (!grpcNotServed_.load()) {  // etcd's gRPC API first, the gateway when it is not served
    std::lock_guard<std::mutex> lock(mutex_);
    if (!grpcHandle_) grpcHandle_ = std::make_unique<CurlHandle>();
    const std::string token = auth_ ? auth_->token() : std::string();
    EtcdRange out;
    std::uint64_t clusterId = 0;
    std::string error;
    switch (grpcRange(grpcHandle_->get(), config_, token, prefix, prefixEnd(prefix),
                      requestTimeout_, onKv, out, clusterId, error)) {
      case GrpcRangeOutcome::Read:
        noteHeader(std::to_string(clusterId), out.revision);
        grpcReads_.fetch_add(1);
        return out;
      case GrpcRangeOutcome::Unreachable:
        throw Error("etcd at {} unreachable: {} (during get prefix {})", endpoint_, error,
                    shown(prefix));
      case GrpcRangeOutcome::NoHttp2:  // not tried again by this client
        grpcNotServed_ = true;
        break;
      case GrpcRangeOutcome::NotServed:  // said by the gateway (a stale token is renewed there)
        break;
    }
  }
  auto call = unary();
  const std::string what = "get prefix " + shown(prefix);
  EtcdRange out =
      parseRange(call.post("/v3/kv/range",
                           {{"key", b64(prefix)}, {"range_end", b64(prefixEnd(prefix))}}, what),
                 what);
  if (onKv)
    for (const auto& kv : out.kvs) onKv(kv);
  return out;
}

bool EtcdClient::del(const std::string& key) {
  auto call = unary();
  auto r = call.post("/v3/kv/deleterange", {{"key", b64(key)}}, "delete " + shown(key));
  return i64(r, "deleted") > 0;
}

std::int64_t EtcdClient::delPrefix(const std::string& prefix) {
  auto call = unary();
  auto r =
      call.post("/v3/kv/deleterange", {{"key", b64(prefix)}, {"range_end", b64(prefixEnd(prefix))}},
                "delete prefix " + shown(prefix));
  return i64(r, "deleted");
}

std::int64_t EtcdClient::grantLease(std::int64_t ttlSeconds) {
  auto call = unary();
  const std::string what = fmt::format("lease grant (TTL {} s)", ttlSeconds);
  auto r = call.post("/v3/lease/grant", {{"TTL", std::to_string(ttlSeconds)}}, what);
  if (auto e = str(r, "error"); !e.empty()) throw Error("etcd {} failed: {}", what, e);
  const auto id = i64(r, "ID");
  if (id == 0) throw Error("etcd {} failed: no lease ID in the answer", what);
  return id;
}

std::int64_t EtcdClient::keepAliveOnce(std::int64_t leaseId) {
  auto call = unary();
  // A streamed endpoint: one request object in, one {"result": {...}} out, then EOF.
  auto r = call.post("/v3/lease/keepalive", {{"ID", std::to_string(leaseId)}},
                     fmt::format("lease keepalive {}", leaseId));
  return i64(r["result"], "TTL");  // left out (0) once the lease has expired
}

bool EtcdClient::revoke(std::int64_t leaseId) {
  auto call = unary();
  try {
    call.post("/v3/lease/revoke", {{"ID", std::to_string(leaseId)}},
              fmt::format("lease revoke {}", leaseId));
    return true;
  } catch (const Error&) {
    if (call.lastCode() == kGrpcNotFound) return false;
    throw;
  }
}

bool EtcdClient::txnPutIfAbsent(const std::string& key, const std::string& value,
                                std::int64_t leaseId) {
  auto call = unary();
  json put = {{"key", b64(key)}, {"value", b64(value)}};
  if (leaseId != 0) put["lease"] = std::to_string(leaseId);
  json body = {
      {"compare", json::array({{{"key", b64(key)},
                                {"target", "CREATE"},
                                {"result", "EQUAL"},
                                {"create_revision", "0"}}})},
      {"success", json::array({{{"request_put", put}}})},
      {"failure", json::array()},
  };
  auto r = call.post("/v3/kv/txn", body, "put-if-absent " + shown(key));
  return flag(r, "succeeded");  // left out when false
}

std::optional<std::int64_t> EtcdClient::txnPutIfUnchanged(const std::string& key,
                                                          const std::string& value,
                                                          std::int64_t expectedModRevision,
                                                          std::int64_t leaseId) {
  auto call = unary();
  json compare = {{"key", b64(key)}, {"result", "EQUAL"}};
  if (expectedModRevision == 0) {
    compare["target"] = "CREATE";
    compare["create_revision"] = "0";
  } else {
    compare["target"] = "MOD";
    compare["mod_revision"] = std::to_string(expectedModRevision);
  }
  json put = {{"key", b64(key)}, {"value", b64(value)}};
  if (leaseId != 0) put["lease"] = std::to_string(leaseId);
  json body = {
      {"compare", json::array({compare})},
      {"success", json::array({{{"request_put", put}}})},
      {"failure", json::array()},
  };
  auto r = call.post("/v3/kv/txn", body, "put-if-unchanged " + shown(key));
  if (!flag(r, "succeeded")) return std::nullopt;
  return i64(r.value("header", json::object()), "revision");
}

bool EtcdClient::txnDeleteIfUnchanged(const std::string& key, std::int64_t expectedModRevision) {
  auto call = unary();
  json body = {
      {"compare", json::array({{{"key", b64(key)},
                                {"target", "MOD"},
                                {"result", "EQUAL"},
                                {"mod_revision", std::to_string(expectedModRevision)}}})},
      {"success", json::array({{{"request_delete_range", {{"key", b64(key)}}}}})},
      {"failure", json::array()},
  };
  auto r = call.post("/v3/kv/txn", body, "delete-if-unchanged " + shown(key));
  return flag(r, "succeeded");
}

EtcdTxnResult EtcdClient::txn(const std::vector<EtcdCompare>& compares,
                              const std::vector<EtcdOp>& success,
                              const std::vector<EtcdOp>& failure) {
  auto call = unary();
  const auto ops = [](const std::vector<EtcdOp>& list) {
    json out = json::array();
    for (const auto& op : list) {
      if (op.type == EtcdOp::Type::Put) {
        json put = {{"key", b64(op.key)}, {"value", b64(op.value)}};
        if (op.lease != 0) put["lease"] = std::to_string(op.lease);
        out.push_back({{"request_put", put}});
      } else {
        json del = {{"key", b64(op.key)}};
        if (!op.rangeEnd.empty()) del["range_end"] = b64(op.rangeEnd);
        out.push_back({{"request_delete_range", del}});
      }
    }
    return out;
  };
  json cmp = json::array();
  for (const auto& c : compares) {
    json one = {{"key", b64(c.key)}, {"result", "EQUAL"}};
    if (c.modRevision == 0) {
      one["target"] = "CREATE";
      one["create_revision"] = "0";
    } else {
      one["target"] = "MOD";
      one["mod_revision"] = std::to_string(c.modRevision);
    }
    cmp.push_back(std::move(one));
  }
  const std::string what =
      fmt::format("transaction ({} compare(s), {} operation(s){})", compares.size(), success.size(),
                  success.empty() ? "" : ", first on " + shown(success[0].key));
  auto r = call.post(
      "/v3/kv/txn",
      {{"compare", std::move(cmp)}, {"success", ops(success)}, {"failure", ops(failure)}}, what);
  return {flag(r, "succeeded"), i64(r.value("header", json::object()), "revision")};
}

EtcdRange EtcdClient::keysUnder(const std::string& prefix) {
  auto call = unary();
  const std::string what = "list keys under " + shown(prefix);
  return parseRange(
      call.post("/v3/kv/range",
                {{"key", b64(prefix)}, {"range_end", b64(prefixEnd(prefix))}, {"keys_only", true}},
                what),
      what);
}

std::vector<EtcdKeyValue> EtcdClient::getKeys(const std::vector<std::string>& keys,
                                              std::int64_t revision) {
  if (keys.size() > kEtcdMaxTxnOps)
    throw Error("etcd get of {} keys: over the {} one transaction may read", keys.size(),
                kEtcdMaxTxnOps);
  auto call = unary();
  json ranges = json::array();
  for (const auto& key : keys) {
    json one = {{"key", b64(key)}};
    if (revision != 0) one["revision"] = std::to_string(revision);
    ranges.push_back({{"request_range", std::move(one)}});
  }
  const std::string what =
      fmt::format("get {} key(s){}", keys.size(), keys.empty() ? "" : ", first " + shown(keys[0]));
  auto r =
      call.post("/v3/kv/txn", {{"compare", json::array()}, {"success", std::move(ranges)}}, what);
  std::vector<EtcdKeyValue> out;
  if (auto responses = r.find("responses"); responses != r.end() && responses->is_array())
    for (const auto& one : *responses) {
      const auto range = one.find("response_range");
      if (range == one.end() || !range->is_object()) continue;
      if (auto kvs = range->find("kvs"); kvs != range->end() && kvs->is_array())
        for (const auto& kv : *kvs) out.push_back(parseKv(kv, what));
    }
  return out;
}

void EtcdClient::compact(std::int64_t revision) {
  auto call = unary();
  call.post("/v3/kv/compaction", {{"revision", std::to_string(revision)}, {"physical", true}},
            fmt::format("compaction to revision {}", revision));
}

std::string EtcdClient::prefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(end.back());
    if (last < 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key: etcd reads range_end "\0" as "to the end"
}

namespace {

// The watch stream's state: splits the body into JSON lines and hands events on.
struct WatchStream {
  std::function<void(const json&)> onHeader;  // sees every stream line's header

  WatchStream(CURL* c, const std::string& w, const EtcdClient::WatchCallback& cb, std::int64_t from)
      : curl(c), what(w), callback(cb), fromRevision(from) {}

  CURL* curl;
  const std::string& what;
  const EtcdClient::WatchCallback& callback;
  std::int64_t fromRevision;
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

  // Non-zero aborts the transfer: the caller asked the watch to end.
  static int onProgress(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    return static_cast<const std::atomic<bool>*>(cancel)->load() ? 1 : 0;
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
  const std::string token = auth_ ? auth_->token() : std::string();
  try {
    return watchOnce(keyOrPrefix, fromRevision, callback, timeout, scope, cancel, token);
  } catch (const AuthExpired&) {
    // Refused before any event was handed on: the stream sends no event before it is
    // created, and creating it is what checks the token.
    auth_->expire(token);
    return watchOnce(keyOrPrefix, fromRevision, callback, timeout, scope, cancel, auth_->token());
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
  const std::string url = endpoint_ + "/v3/watch";

  CurlHandle handle;  // its own connection: a watch holds it for as long as it runs
  char errbuf[CURL_ERROR_SIZE] = {0};
  WatchStream stream{handle.get(), what, callback, fromRevision};
  stream.onHeader = [this](const json& h) { noteHeader(clusterIdOf(h), i64(h, "revision")); };
  stream.authed = !token.empty();
  Headers headers(token);
  setRequest(handle.get(), config_, url, body, headers, errbuf);
  setTimeouts(handle.get(), timeout);
  curl_easy_setopt(handle.get(), CURLOPT_WRITEFUNCTION, WatchStream::onWrite);
  curl_easy_setopt(handle.get(), CURLOPT_WRITEDATA, &stream);
  if (cancel) {
    curl_easy_setopt(handle.get(), CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(handle.get(), CURLOPT_XFERINFOFUNCTION, WatchStream::onProgress);
    curl_easy_setopt(handle.get(), CURLOPT_XFERINFODATA, cancel);
  }
  const auto start = std::chrono::steady_clock::now();
  CURLcode rc = curl_easy_perform(handle.get());

  if (stream.error) std::rethrow_exception(stream.error);
  if (stream.stopped || (cancel && cancel->load())) return true;
  long status = 0;
  curl_easy_getinfo(handle.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status != 0 && status != 200) {
    const std::string message = gatewayMessage(stream.errorBody);
    if (stream.authed &&
        isAuthExpired(gatewayCode(json::parse(stream.errorBody, nullptr, false)), message))
      throw AuthExpired("etcd {} failed: HTTP {} {}", what, status, message);
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
  if (rc != CURLE_OK)
    throw Error("etcd at {} unreachable: {} (during {})", endpoint_, curlMessage(rc, errbuf), what);
  throw Error("etcd at {} unreachable: the server ended the {} stream", endpoint_, what);
}

EtcdClient::Identity EtcdClient::identity() const {
  std::lock_guard<std::mutex> lock(identityMutex_);
  return identity_;
}

void EtcdClient::guardIdentity() {
  std::lock_guard<std::mutex> lock(identityMutex_);
  guarded_ = true;
}

void EtcdClient::noteHeader(const std::string& clusterId, std::int64_t revision) {
  std::lock_guard<std::mutex> lock(identityMutex_);
  const Identity was = identity_;
  const bool otherCluster =
      !clusterId.empty() && !was.clusterId.empty() && clusterId != was.clusterId;
  const bool wentBack = revision > 0 && revision < was.revision;
  if (!clusterId.empty()) identity_.clusterId = clusterId;
  if (otherCluster || wentBack)
    identity_.revision = revision;  // adopted: the next answer from it passes
  else
    identity_.revision = std::max(identity_.revision, revision);
  if (!guarded_) return;
  if (otherCluster)
    throw EtcdClusterChanged(
        "etcd at {} is another cluster now (cluster ID {}, was {}): it was replaced or restored "
        "from a backup",
        endpoint_, clusterId, was.clusterId);
  if (wentBack)
    throw EtcdClusterChanged(
        "etcd at {} went back from revision {} to {}: it was wiped or restored from a backup",
        endpoint_, was.revision, revision);
}

}  // namespace mesh::fleet
