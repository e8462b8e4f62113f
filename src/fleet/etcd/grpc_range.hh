// The range read over etcd's gRPC API: etcdserverpb.KV/Range over HTTP/2 with libcurl
// (prior knowledge over http://, ALPN over https://), the body read by grpc_codec.hh as
// it arrives. Its rules: a connection of its own each time (libcurl 7.88 fails a second
// call on an HTTP/2 connection it keeps); the call is taken only when it came over
// HTTP/2 with grpc-status 0 and a whole answer; any other answer is no error here but
// an outcome, for the client to ask the gateway, whose answer says it in etcd's words.
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "fleet/etcd.hh"

namespace mesh::fleet::etcd {

enum class GrpcRangeOutcome { Read, NoHttp2, NotServed };

// One Range call on `curl` to the member config.endpoint. Read: `out` holds the answer.
// NoHttp2: an answer came, but not over HTTP/2 (a proxy in between). NotServed: anything
// else — not gRPC, a gRPC error (a refused token, a permission, a limit, no leader).
// Throws EtcdMemberFailed (during `what`) when the member could not be connected to or did
// not answer in time.
GrpcRangeOutcome grpcRange(CURL* curl, const EtcdConfig& config, const std::string& token,
                           const std::string& key, const std::string& rangeEnd,
                           std::chrono::milliseconds timeout, const EtcdClient::KvObserver& onKv,
                           EtcdRange& out, std::uint64_t& clusterId, const std::string& what);

}  // namespace mesh::fleet::etcd
