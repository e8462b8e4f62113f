// The client's verbs: each one request (a unary call through the gateway, or the gRPC
// range for getPrefix) and what its answer means. The parts they are made of are the
// other files of this folder (docs/etcd.md lists them).
#include <fmt/format.h>

#include <cstdint>
#include <utility>

#include "fleet/etcd.hh"

#include "fleet/etcd/auth.hh"
#include "fleet/etcd/gateway_codec.hh"
#include "fleet/etcd/grpc_range.hh"
#include "fleet/etcd/transport.hh"
#include "fleet/etcd/unary.hh"
#include "util/error.hh"
#include "util/text_safe.hh"

namespace mesh::fleet {

using namespace etcd;

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

}  // namespace mesh::fleet
