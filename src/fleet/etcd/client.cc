// The client's verbs: each one request (a unary call through the gateway, or the gRPC
// range for getPrefix) and what its answer means. The parts they are made of are the
// other files of this folder (docs/etcd.md lists them).
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <thread>
#include <utility>

#include "fleet/etcd.hh"

#include "fleet/etcd/auth.hh"
#include "fleet/etcd/gateway_codec.hh"
#include "fleet/etcd/grpc_range.hh"
#include "fleet/etcd/members.hh"
#include "fleet/etcd/transport.hh"
#include "fleet/etcd/unary.hh"
#include "util/error.hh"
#include "util/text_safe.hh"

namespace mesh::fleet {

using namespace etcd;

EtcdClient::EtcdClient(std::string endpoint, std::chrono::milliseconds requestTimeout)
    : EtcdClient(
          [&] {
            EtcdConfig c;
            c.endpoint = std::move(endpoint);
            return c;
          }(),
          requestTimeout) {}

EtcdClient::EtcdClient(EtcdConfig config, std::chrono::milliseconds requestTimeout)
    : config_(std::move(config)), requestTimeout_(requestTimeout) {
  if (!config_.members) {
    auto urls = Members::parse(config_.endpoint);
    const auto first = Members::firstFor(config_.spreadBy, urls.size());
    config_.members = std::make_shared<Members>(std::move(urls), first);
  }
  members_ = config_.members;
  while (!config_.endpoint.empty() && config_.endpoint.back() == '/') config_.endpoint.pop_back();
  endpoint_ = config_.endpoint;
  if (!config_.user.empty()) auth_ = std::make_unique<Auth>(config_);
  initOnce();
}

EtcdClient::~EtcdClient() = default;

std::string EtcdClient::member() const {
  return members_->url(members_->current());
}

etcd::Unary EtcdClient::unary(std::size_t m) {
  return etcd::Unary(mutex_, handle_, config_, members_->url(m), auth_.get(), requestTimeout_,
                     [this](const json& h) { noteHeader(clusterIdOf(h), i64(h, "revision")); });
}

namespace {

using Kind = EtcdMemberFailed::Kind;

// What every member said when none could serve `what`, in the words of what was seen.
Error noMemberCould(const std::string& what,
                    const std::vector<std::pair<Kind, std::string>>& seen) {
  std::size_t noLeader = 0, tried = 0;
  std::string details;
  for (const auto& [kind, words] : seen) {
    if (words.empty()) continue;
    ++tried;
    if (kind == Kind::NoLeader) ++noLeader;
    details += (details.empty() ? "" : "; ") + words;
  }
  if (noLeader > 0 && noLeader == tried && tried == seen.size())
    return Error(
        "etcd has no leader: all {} members answer and none has a leader (an election, or "
        "members that cannot reach each other) during {}: {}",
        seen.size(), what, details);
  if (noLeader > 0)
    return Error("etcd quorum lost: {} of {} members answer and none has a leader, during {}: {}",
                 noLeader, seen.size(), what, details);
  return Error("etcd unreachable: none of its {} members could serve {}: {}", seen.size(), what,
               details);
}

}  // namespace

// A member that fails a call hands over to the next (Members::failed); the call goes there.
// Reads, puts, deletes, lease calls are the same request wherever and however often they
// are sent; a transaction is sent again only when nothing of it can have been applied
// (Resend::IfNotApplied), else its caller judges it (txn, settleTxn).
template <class Call>
auto EtcdClient::onMembers(const std::string& what, Resend resend, Call&& call)
    -> decltype(call(0)) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + config_.retryWithin;
  auto backoff = std::chrono::milliseconds(50);
  const std::size_t n = members_->size();
  for (;;) {
    std::vector<std::pair<Kind, std::string>> seen(n);
    bool answered = false;  // some member answered (no leader, 5xx) or took the connection
    for (std::size_t tried = 0; tried < n; ++tried) {
      const std::size_t m = members_->current();
      try {
        auto result = call(m);
        members_->succeeded(m);
        return result;
      } catch (const EtcdMemberFailed& e) {
        members_->failed(m, e.what());
        if (resend == Resend::IfNotApplied && e.mayHaveApplied()) throw;
        seen[m] = {e.kind(), e.what()};
        answered = answered || e.kind() != Kind::Unreachable;
        const bool again = answered && Clock::now() + backoff < deadline;
        if (n == 1 && !again) throw;
      }
    }
    if (!answered || Clock::now() + backoff >= deadline) throw noMemberCould(what, seen);
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

// Sent again after a member failed it: the same value put again is the same state (a
// watcher may see it twice, with one value; fleet mode judges values by content).
std::int64_t EtcdClient::put(const std::string& key, const std::string& value,
                             std::int64_t leaseId) {
  json body = {{"key", b64(key)}, {"value", b64(value)}};
  if (leaseId != 0) body["lease"] = std::to_string(leaseId);
  const std::string what = "put " + shown(key);
  auto r = onMembers(what, Resend::Always,
                     [&](std::size_t m) { return unary(m).post("/v3/kv/put", body, what); });
  return i64(r["header"], "revision");
}

std::optional<EtcdValue> EtcdClient::get(const std::string& key) {
  const std::string what = "get " + shown(key);
  auto r = onMembers(what, Resend::Always, [&](std::size_t m) {
    return unary(m).post("/v3/kv/range", {{"key", b64(key)}}, what);
  });
  auto kvs = r.find("kvs");
  if (kvs == r.end() || !kvs->is_array() || kvs->empty()) return std::nullopt;
  auto kv = parseKv(kvs->front(), what);
  return EtcdValue{std::move(kv.value), kv.modRevision};
}

EtcdRange EtcdClient::getPrefix(const std::string& prefix) {
  return getPrefix(prefix, {});
}

EtcdRange EtcdClient::getPrefix(const std::string& prefix, const KvObserver& onKv) {
  const std::string what = "get prefix " + shown(prefix);
  return onMembers(what, Resend::Always, [&](std::size_t m) {
    if (!grpcNotServed_.load()) {  // etcd's gRPC API first, the gateway when it is not served
      std::lock_guard<std::mutex> lock(mutex_);
      if (!grpcHandle_) grpcHandle_ = std::make_unique<CurlHandle>();
      const std::string token = auth_ ? auth_->token(members_->url(m)) : std::string();
      EtcdConfig at = config_;
      at.endpoint = members_->url(m);
      EtcdRange out;
      std::uint64_t clusterId = 0;
      switch (grpcRange(grpcHandle_->get(), at, token, prefix, prefixEnd(prefix), requestTimeout_,
                        onKv, out, clusterId, what)) {
        case GrpcRangeOutcome::Read:
          noteHeader(std::to_string(clusterId), out.revision);
          grpcReads_.fetch_add(1);
          return out;
        case GrpcRangeOutcome::NoHttp2:  // not tried again by this client
          grpcNotServed_ = true;
          break;
        case GrpcRangeOutcome::NotServed:  // said by the gateway (a stale token is renewed
          break;                           // there, no leader said as such)
      }
    }
    EtcdRange out = parseRange(
        unary(m).post("/v3/kv/range", {{"key", b64(prefix)}, {"range_end", b64(prefixEnd(prefix))}},
                      what),
        what);
    if (onKv)
      for (const auto& kv : out.kvs) onKv(kv);
    return out;
  });
}

// Deletes sent again: the key is gone either way (the count may then miss the first's).
bool EtcdClient::del(const std::string& key) {
  const std::string what = "delete " + shown(key);
  auto r = onMembers(what, Resend::Always, [&](std::size_t m) {
    return unary(m).post("/v3/kv/deleterange", {{"key", b64(key)}}, what);
  });
  return i64(r, "deleted") > 0;
}

std::int64_t EtcdClient::delPrefix(const std::string& prefix) {
  const std::string what = "delete prefix " + shown(prefix);
  auto r = onMembers(what, Resend::Always, [&](std::size_t m) {
    return unary(m).post("/v3/kv/deleterange",
                         {{"key", b64(prefix)}, {"range_end", b64(prefixEnd(prefix))}}, what);
  });
  return i64(r, "deleted");
}

// A grant sent again may leave the first lease behind unused: it holds no key and expires
// within its TTL.
std::int64_t EtcdClient::grantLease(std::int64_t ttlSeconds) {
  const std::string what = fmt::format("lease grant (TTL {} s)", ttlSeconds);
  auto r = onMembers(what, Resend::Always, [&](std::size_t m) {
    return unary(m).post("/v3/lease/grant", {{"TTL", std::to_string(ttlSeconds)}}, what);
  });
  if (auto e = str(r, "error"); !e.empty()) throw Error("etcd {} failed: {}", what, e);
  const auto id = i64(r, "ID");
  if (id == 0) throw Error("etcd {} failed: no lease ID in the answer", what);
  return id;
}

std::int64_t EtcdClient::keepAliveOnce(std::int64_t leaseId) {
  // A streamed endpoint: one request object in, one {"result": {...}} out, then EOF. As a
  // stream it is leader-required: a member without a leader refuses it.
  const std::string what = fmt::format("lease keepalive {}", leaseId);
  auto r = onMembers(what, Resend::Always, [&](std::size_t m) {
    return unary(m).post("/v3/lease/keepalive", {{"ID", std::to_string(leaseId)}}, what);
  });
  return i64(r["result"], "TTL");  // left out (0) once the lease has expired
}

// Reads nothing and writes nothing: sent again wherever.
void EtcdClient::probe() {
  const std::string what = "status probe";
  onMembers(what, Resend::Always, [&](std::size_t m) {
    return unary(m).post("/v3/maintenance/status", json::object(), what);
  });
}

// Sent again after a member failed it, a revoke that was applied answers "not found": false.
bool EtcdClient::revoke(std::int64_t leaseId) {
  const std::string what = fmt::format("lease revoke {}", leaseId);
  return onMembers(what, Resend::Always, [&](std::size_t m) {
    auto call = unary(m);
    try {
      call.post("/v3/lease/revoke", {{"ID", std::to_string(leaseId)}}, what);
      return true;
    } catch (const EtcdMemberFailed&) {
      throw;
    } catch (const Error&) {
      if (call.lastCode() == kGrpcNotFound) return false;
      throw;
    }
  });
}

bool EtcdClient::txnPutIfAbsent(const std::string& key, const std::string& value,
                                std::int64_t leaseId) {
  return txn({{key, 0}}, {EtcdOp::put(key, value, leaseId)}).succeeded;
}

std::optional<std::int64_t> EtcdClient::txnPutIfUnchanged(const std::string& key,
                                                          const std::string& value,
                                                          std::int64_t expectedModRevision,
                                                          std::int64_t leaseId) {
  const auto r = txn({{key, expectedModRevision}}, {EtcdOp::put(key, value, leaseId)});
  if (!r.succeeded) return std::nullopt;
  return r.revision;
}

// A compare of mod revision 0 holds for a missing key, as create revision 0 does, and an
// existing key has neither: the same answer as comparing the mod revision itself.
bool EtcdClient::txnDeleteIfUnchanged(const std::string& key, std::int64_t expectedModRevision) {
  return txn({{key, expectedModRevision}}, {EtcdOp::del(key)}).succeeded;
}

namespace {

json txnBody(const std::vector<EtcdCompare>& compares, const std::vector<EtcdOp>& success,
             const std::vector<EtcdOp>& failure) {
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
  return {{"compare", std::move(cmp)}, {"success", ops(success)}, {"failure", ops(failure)}};
}

}  // namespace

EtcdTxnResult EtcdClient::txn(const std::vector<EtcdCompare>& compares,
                              const std::vector<EtcdOp>& success,
                              const std::vector<EtcdOp>& failure) {
  const std::string what =
      fmt::format("transaction ({} compare(s), {} operation(s){})", compares.size(), success.size(),
                  success.empty() ? "" : ", first on " + shown(success[0].key));
  const json body = txnBody(compares, success, failure);
  try {
    auto r = onMembers(what, Resend::IfNotApplied,
                       [&](std::size_t m) { return unary(m).post("/v3/kv/txn", body, what); });
    return {flag(r, "succeeded"), i64(r.value("header", json::object()), "revision")};
  } catch (const EtcdMemberFailed& e) {
    if (!e.mayHaveApplied()) throw;
    return settleTxn(compares, success, failure, e);
  }
}

// Judged from the keys as another member reads them now (a linearizable read: it sees
// whatever the failed member committed). See txn in etcd.hh for why this is sound.
EtcdTxnResult EtcdClient::settleTxn(const std::vector<EtcdCompare>& compares,
                                    const std::vector<EtcdOp>& success,
                                    const std::vector<EtcdOp>& failure,
                                    const EtcdMemberFailed& failed) {
  std::vector<std::string> keys;
  bool rangeDelete = false;
  for (const auto& c : compares) keys.push_back(c.key);
  for (const auto& op : success) {
    keys.push_back(op.key);
    rangeDelete = rangeDelete || !op.rangeEnd.empty();
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::map<std::string, EtcdKeyValue> now;
  for (std::size_t at = 0; at < keys.size(); at += kEtcdMaxTxnOps) {
    const std::vector<std::string> chunk(
        keys.begin() + static_cast<std::ptrdiff_t>(at),
        keys.begin() + static_cast<std::ptrdiff_t>(std::min(keys.size(), at + kEtcdMaxTxnOps)));
    for (auto& kv : getKeys(chunk)) now[kv.key] = std::move(kv);
  }
  // Applied: every put holds its value (on its lease), every deleted key is gone.
  bool applied = !success.empty() && !rangeDelete;
  std::int64_t revision = 0;
  for (const auto& op : success) {
    const auto it = now.find(op.key);
    if (op.type == EtcdOp::Type::Put) {
      applied = applied && it != now.end() && it->second.value == op.value &&
                (op.lease == 0 || it->second.lease == op.lease);
      if (it != now.end()) revision = std::max(revision, it->second.modRevision);
    } else {
      applied = applied && it == now.end();
    }
  }
  if (applied) return {true, revision};
  bool hold = true;
  for (const auto& c : compares) {
    const auto it = now.find(c.key);
    hold =
        hold && (c.modRevision == 0 ? it == now.end()
                                    : it != now.end() && it->second.modRevision == c.modRevision);
  }
  // Nothing applied (the compares still hold, so neither branch ran): the same request
  // again, on the member in use now. Only once: a second uncertain failure is the caller's.
  if (hold) {
    const std::string what = fmt::format("transaction, sent again after: {}", failed.what());
    auto r = onMembers(what, Resend::IfNotApplied, [&](std::size_t m) {
      return unary(m).post("/v3/kv/txn", txnBody(compares, success, failure), what);
    });
    return {flag(r, "succeeded"), i64(r.value("header", json::object()), "revision")};
  }
  // A key changed, and not to what `success` puts: someone else's write; `failure` may have
  // run, which only the caller can tell.
  if (!failure.empty()) throw failed;
  return {false, 0};
}

EtcdRange EtcdClient::keysUnder(const std::string& prefix) {
  const std::string what = "list keys under " + shown(prefix);
  return parseRange(onMembers(what, Resend::Always,
                              [&](std::size_t m) {
                                return unary(m).post("/v3/kv/range",
                                                     {{"key", b64(prefix)},
                                                      {"range_end", b64(prefixEnd(prefix))},
                                                      {"keys_only", true}},
                                                     what);
                              }),
                    what);
}

std::vector<EtcdKeyValue> EtcdClient::getKeys(const std::vector<std::string>& keys,
                                              std::int64_t revision) {
  if (keys.size() > kEtcdMaxTxnOps)
    throw Error("etcd get of {} keys: over the {} one transaction may read", keys.size(),
                kEtcdMaxTxnOps);
  json ranges = json::array();
  for (const auto& key : keys) {
    json one = {{"key", b64(key)}};
    if (revision != 0) one["revision"] = std::to_string(revision);
    ranges.push_back({{"request_range", std::move(one)}});
  }
  const std::string what =
      fmt::format("get {} key(s){}", keys.size(), keys.empty() ? "" : ", first " + shown(keys[0]));
  const json body = {{"compare", json::array()}, {"success", std::move(ranges)}};
  auto r = onMembers(what, Resend::Always,
                     [&](std::size_t m) { return unary(m).post("/v3/kv/txn", body, what); });
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
  const std::string what = fmt::format("compaction to revision {}", revision);
  onMembers(what, Resend::Always, [&](std::size_t m) {
    return unary(m).post("/v3/kv/compaction",
                         {{"revision", std::to_string(revision)}, {"physical", true}}, what);
  });
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
