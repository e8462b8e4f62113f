// A small etcd v3 client, spoken with libcurl: every call through etcd 3.4's JSON gateway
// (grpc-gateway on the client port), but the read of a whole prefix, which goes over
// etcd's gRPC API (KV/Range over HTTP/2) when etcd serves it there. It hides the
// gateway's quirks: keys and values travel as base64, int64 fields arrive as JSON
// strings, zero-valued fields are left out, and watch answers with a stream of
// newline-delimited JSON objects. Its parts, one concept per file, are in fleet/etcd/.
//
// A client speaks to one member of a cluster at a time (fleet/etcd/members.hh): every
// request asks for a member with a leader (the `hasleader` metadata, as etcd's own client's
// WithRequireLeader), and a member that cannot serve a call — unreachable, hung (no answer
// in kAnswerBudget), without a leader, dropping the connection, or answering 5xx — hands
// over to the next. Every failure is a mesh::Error naming what was seen and where ("etcd at
// URL unreachable: ...", "etcd at URL has no leader ...", "etcd put KEY failed: HTTP 400
// ..."); a watch from a compacted revision throws EtcdCompacted. A watch's timeout is no
// failure (it returns false) unless etcd cannot be connected to. See docs/etcd.md.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "util/error.hh"
#include "util/secret.hh"

namespace mesh::fleet {

namespace etcd {
class Members;  // etcd/members.hh: the cluster's members, which one is in use
}  // namespace etcd

// How to reach etcd: the endpoint, and for a secured etcd the TLS files and the user.
// TLS: `caCert` (PEM) verifies the server (default: the system's CAs); `clientCert`
// and `clientKey` (PEM) are presented to an etcd that asks for client certificates.
// Auth: with `user` set, the client authenticates (POST /v3/auth/authenticate) before
// its first request and sends the token in the Authorization header; a token etcd no
// longer accepts (it expired, etcd restarted) is renewed once and the call retried.
// The TLS files and the user apply to every member.
struct EtcdConfig {
  // http://host:2379 or https://host:2379, or the client URLs of a cluster's members
  // separated by commas (etcdctl's --endpoints).
  std::string endpoint;
  std::string caCert, clientCert, clientKey;
  std::string user;
  std::shared_ptr<const Secret> password;  // with `user`; never printed
  // A name whose hash picks the member used first (a node's name, so that nodes spread
  // over the members); "" the first.
  std::string spreadBy;
  // How long a call keeps trying, with backoff, while some member answers but none can
  // serve it (an election, quorum lost for a while); 0: once round the members. Calls
  // fail at once when no member can be connected to.
  std::chrono::milliseconds retryWithin{0};
  // Shared by every client made from a copy of this configuration (set by the first
  // client: EtcdClient::config() carries it); null until then.
  std::shared_ptr<etcd::Members> members;
};

// How long a member may take to start answering a unary call, or a watch's creation,
// before it counts as hung and the client moves on.
inline constexpr std::chrono::milliseconds kAnswerBudget{2000};

// One member could not serve a call, and what was seen. The client moves to the next
// member and sends the call again there, unless it was a transaction the member may have
// applied (see EtcdClient::txn). What leaves the client is this when the call cannot be
// sent again, else a plain Error with every member's words.
class EtcdMemberFailed : public Error {
 public:
  enum class Kind {
    Unreachable,  // no connection could be made: nothing was sent
    Hung,         // connected, and no answer within the budget
    NoLeader,     // it answered "etcdserver: no leader": refused, nothing applied
    Dropped,      // the connection or the stream ended before the answer was whole
    ServerError,  // any other 5xx: "request timed out", "leader changed", ...
  };
  EtcdMemberFailed(Kind kind, std::string member, const std::string& what)
      : Error(what), kind_(kind), member_(std::move(member)) {}
  Kind kind() const { return kind_; }
  const std::string& member() const { return member_; }
  // The request was sent and no answer says it was refused.
  bool mayHaveApplied() const {
    return kind_ == Kind::Hung || kind_ == Kind::Dropped || kind_ == Kind::ServerError;
  }

 private:
  Kind kind_;
  std::string member_;
};

namespace etcd {
class Auth;        // etcd/auth.hh: the token of a client with a user
class CurlHandle;  // etcd/transport.hh
class Unary;       // etcd/unary.hh
}  // namespace etcd

struct EtcdValue {
  std::string value;
  std::int64_t modRevision = 0;
};

struct EtcdKeyValue {
  std::string key;
  std::string value;
  std::int64_t modRevision = 0;
  std::int64_t createRevision = 0;
  std::int64_t lease = 0;
};

struct EtcdRange {
  std::vector<EtcdKeyValue> kvs;  // sorted by key
  std::int64_t revision = 0;      // the store's revision when read (response header)
};

struct EtcdEvent {
  enum class Type { Put, Delete };
  Type type = Type::Put;
  EtcdKeyValue kv;  // for Delete: key and modRevision (the delete's revision), no value
};

// The watch's start revision has been compacted away: re-read, then watch from the read's
// revision + 1. compactRevision() is the oldest revision still available when etcd says
// (etcd 3.4 does, in the watch result's compact_revision), and 0 when it is unknown: the
// gateway's stream error ({"error": {"message": "...required revision has been compacted"}})
// carries no revision. 0 is never a revision to watch from (it means "from now").
class EtcdCompacted : public Error {
 public:
  EtcdCompacted(const std::string& what, std::int64_t compactRevision)
      : Error(what), compactRevision_(compactRevision) {}
  std::int64_t compactRevision() const { return compactRevision_; }

 private:
  std::int64_t compactRevision_;
};

// Another etcd answers than the one this client was talking to: its cluster ID changed,
// or its revision went back (wiped and started again, restored from a backup, replaced;
// etcd's revision never goes back within one cluster). Thrown only by a client that
// guardIdentity(), once per change: the new identity is adopted as it is thrown.
class EtcdClusterChanged : public Error {
 public:
  using Error::Error;
};

// One condition of a transaction (EtcdClient::txn): the key's mod revision is still
// `modRevision`; 0 means the key must not exist (its create revision is 0).
struct EtcdCompare {
  std::string key;
  std::int64_t modRevision = 0;
};

// One operation of a transaction: a put (with its lease, 0 none), or a delete of `key`
// alone or, with `rangeEnd` set, of every key in [key, rangeEnd).
struct EtcdOp {
  enum class Type { Put, Delete };
  Type type = Type::Put;
  std::string key;
  std::string value;       // Put
  std::int64_t lease = 0;  // Put
  std::string rangeEnd;    // Delete; "" the key alone

  static EtcdOp put(std::string key, std::string value, std::int64_t lease = 0) {
    return {Type::Put, std::move(key), std::move(value), lease, {}};
  }
  static EtcdOp del(std::string key, std::string rangeEnd = {}) {
    return {Type::Delete, std::move(key), {}, 0, std::move(rangeEnd)};
  }
};

struct EtcdTxnResult {
  bool succeeded = false;     // every compare held, and `success` ran
  std::int64_t revision = 0;  // the store's revision after it (the puts' revision)
};

// etcd's own limits on one request, as it ships (etcd 3.4 defaults; tests/etcd/etcd.sh
// keeps them): at most kEtcdMaxTxnOps compares, and as many operations, in one
// transaction (--max-txn-ops), and at most kEtcdMaxRequestBytes in one request
// (--max-request-bytes). A request over either fails with an Error that says so.
inline constexpr std::size_t kEtcdMaxTxnOps = 128;
inline constexpr std::size_t kEtcdMaxRequestBytes = 1536 * 1024;

class EtcdClient {
 public:
  // endpoint: "http://127.0.0.1:2379" (no trailing path). requestTimeout bounds each
  // unary request; watch has its own timeout.
  explicit EtcdClient(std::string endpoint,
                      std::chrono::milliseconds requestTimeout = std::chrono::seconds(5));
  // A secured etcd (TLS, client certificates, user and password): see EtcdConfig.
  explicit EtcdClient(EtcdConfig config,
                      std::chrono::milliseconds requestTimeout = std::chrono::seconds(5));
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // The endpoints as given (one URL, or the members' separated by commas).
  const std::string& endpoint() const { return endpoint_; }
  // The member in use now.
  std::string member() const;
  const EtcdConfig& config() const { return config_; }
  std::chrono::milliseconds requestTimeout() const { return requestTimeout_; }

  // Returns the revision of the put.
  std::int64_t put(const std::string& key, const std::string& value, std::int64_t leaseId = 0);
  std::optional<EtcdValue> get(const std::string& key);
  // Read through etcd's gRPC API (HTTP/2; a range of 10,000 nodes is tens of MB, which the
  // gateway would send as base64 in JSON), else, when etcd does not serve gRPC there or
  // answers the call with an error, through the gateway as every other call.
  EtcdRange getPrefix(const std::string& prefix);
  // The same, `onKv` shown each key-value as soon as it is read (over gRPC, while the rest
  // of the answer still arrives; through the gateway, once the answer is read), on the
  // calling thread, in key order. A read that fails over gRPC and is asked again through
  // the gateway may show some keys twice.
  using KvObserver = std::function<void(const EtcdKeyValue&)>;
  EtcdRange getPrefix(const std::string& prefix, const KvObserver& onKv);
  // How many getPrefix calls were answered over gRPC.
  std::size_t grpcReads() const { return grpcReads_.load(); }
  // Returns whether the key existed.
  bool del(const std::string& key);
  // Deletes every key under prefix; returns how many there were.
  std::int64_t delPrefix(const std::string& prefix);

  std::int64_t grantLease(std::int64_t ttlSeconds);
  // Renews the lease once; returns its remaining TTL in seconds, 0 when it has expired.
  std::int64_t keepAliveOnce(std::int64_t leaseId);
  // Asks the member in use for its status (maintenance/status, answered by the member
  // itself, leader-required as every call): a member hung, unreachable or without a leader
  // fails it and the clients of this configuration move on, a quiet watch on it included.
  // The liveness probe of a node whose watch has nothing to say.
  void probe();
  // Revokes the lease and deletes its keys; returns false when it was already gone.
  bool revoke(std::int64_t leaseId);

  // Puts key only if it does not exist (compare create_revision == 0); returns whether it did.
  bool txnPutIfAbsent(const std::string& key, const std::string& value, std::int64_t leaseId = 0);

  // Puts key only if its mod revision is still `expectedModRevision` (0: the key
  // must not exist); returns the put's revision, or nullopt when the key changed.
  std::optional<std::int64_t> txnPutIfUnchanged(const std::string& key, const std::string& value,
                                                std::int64_t expectedModRevision,
                                                std::int64_t leaseId = 0);
  // Deletes key only if its mod revision is still `expectedModRevision`; returns whether
  // it did.
  bool txnDeleteIfUnchanged(const std::string& key, std::int64_t expectedModRevision);

  // One transaction: when every compare holds, runs `success`, else `failure`, all at one
  // revision. At most kEtcdMaxTxnOps compares, and as many operations per branch.
  // A member that fails it after it was sent (hung, dropped, 5xx) may have applied it;
  // then the keys are read on another member and the transaction is judged there: every
  // put of `success` in place with its value → it succeeded (at the puts' revision);
  // every compare still holding → nothing was applied, and it is sent again; else it
  // failed (something else changed a key). Sound for what fleet mode sends: each
  // transaction is conditional on the revisions it read, and puts values that name their
  // writer (a signed statement, a push's lock holder), so that a value in place is its own.
  EtcdTxnResult txn(const std::vector<EtcdCompare>& compares, const std::vector<EtcdOp>& success,
                    const std::vector<EtcdOp>& failure = {});

  // Only the keys under prefix (values left empty), sorted: a listing of large values
  // without reading them.
  EtcdRange keysUnder(const std::string& prefix);

  // The keys that exist among `keys`, read at `revision` (0: now) in one read-only
  // transaction of up to kEtcdMaxTxnOps ranges: a few scattered keys without reading
  // everything between them.
  std::vector<EtcdKeyValue> getKeys(const std::vector<std::string>& keys,
                                    std::int64_t revision = 0);

  // Compacts the history up to revision (watches from before it then throw EtcdCompacted).
  void compact(std::int64_t revision);

  enum class WatchScope { Key, Prefix };
  // Called with each batch of events; returns false to end the watch.
  using WatchCallback = std::function<bool(const std::vector<EtcdEvent>&)>;
  // Watches a key (or every key under a prefix) from fromRevision (0 = from now), calling
  // callback for each batch. Returns true when the callback ended it, false when timeout
  // passed first, even before etcd's first answer or before the connection was made, as
  // long as etcd can be connected to within 3 s. Throws "unreachable" when it cannot (then
  // a timeout below 3 s is overrun to find out), and EtcdCompacted when fromRevision has
  // been compacted.
  // `cancel`, when set (from another thread), ends a quiet watch within about a
  // second (libcurl's progress callback); it then returns true as if ended.
  bool watch(const std::string& keyOrPrefix, std::int64_t fromRevision,
             const WatchCallback& callback, std::chrono::milliseconds timeout,
             WatchScope scope = WatchScope::Key, const std::atomic<bool>* cancel = nullptr);

  // The key just past every key starting with prefix ("/a/" -> "/a0"), etcd's range_end.
  static std::string prefixEnd(const std::string& prefix);

  // Which etcd answers: the cluster ID of the newest answer's header ("" before the
  // first) and the highest revision any header carried.
  struct Identity {
    std::string clusterId;
    std::int64_t revision = 0;
  };
  Identity identity() const;
  // From now on, an answer whose cluster ID differs from the one seen so far, or whose
  // revision is below the highest seen, throws EtcdClusterChanged.
  void guardIdentity();

 private:
  void noteHeader(const std::string& clusterId, std::int64_t revision);
  // One unary call to member `m` on handle_, holding mutex_ while it lives.
  etcd::Unary unary(std::size_t m);
  // How a call may be sent again on another member after one failed it.
  enum class Resend { Always, IfNotApplied };
  // Runs call(member) on the member in use, then on the next ones while members fail it
  // (EtcdMemberFailed), for up to config_.retryWithin; throws what was seen.
  template <class Call>
  auto onMembers(const std::string& what, Resend resend, Call&& call) -> decltype(call(0));
  // A transaction a member may have applied, judged on another (see txn).
  EtcdTxnResult settleTxn(const std::vector<EtcdCompare>& compares,
                          const std::vector<EtcdOp>& success, const std::vector<EtcdOp>& failure,
                          const EtcdMemberFailed& failed);
  mutable std::mutex identityMutex_;  // guards identity_ and guarded_
  Identity identity_;
  bool guarded_ = false;
  bool watchOnce(const std::string& keyOrPrefix, std::int64_t fromRevision,
                 const WatchCallback& callback, std::chrono::milliseconds timeout, WatchScope scope,
                 const std::atomic<bool>* cancel, const std::string& token);
  EtcdConfig config_;
  std::shared_ptr<etcd::Members> members_;  // config_.members
  std::unique_ptr<etcd::Auth> auth_;        // null without a user
  std::string endpoint_;
  std::chrono::milliseconds requestTimeout_;
  std::mutex mutex_;  // guards handle_: one reused connection for unary calls
  std::unique_ptr<etcd::CurlHandle> handle_;      // kept alive between calls for connection reuse
  std::unique_ptr<etcd::CurlHandle> grpcHandle_;  // getPrefix's HTTP/2 connection, under mutex_
  std::atomic<bool> grpcNotServed_{false};        // no HTTP/2 there: getPrefix asks the gateway
  std::atomic<std::size_t> grpcReads_{0};
};

}  // namespace mesh::fleet
