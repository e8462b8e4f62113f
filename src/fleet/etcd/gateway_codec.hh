// The gateway codec: what etcd 3.4's v3 JSON gateway (grpc-gateway on the client port)
// sends and wants, read and written in one place. Its rules: keys and values travel as
// base64; int64 fields arrive as JSON strings (numbers are taken too); zero-valued
// fields are left out, so a missing field reads as 0, false or ""; an error body is
// {"error": "...", "code": N, "message": "..."} (unary) or {"error": {"grpc_code": N,
// "message": "...", ...}} (streams). Nothing here does I/O; a malformed answer is a
// mesh::Error naming the call (`what`).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "fleet/etcd.hh"

namespace mesh::fleet::etcd {

using json = nlohmann::json;

// gRPC status codes the client acts on (etcd's gateway passes them on as `code`).
inline constexpr std::int64_t kGrpcNotFound = 5;
inline constexpr std::int64_t kGrpcUnauthenticated = 16;

std::string b64(const std::string& bytes);
// Throws "etcd WHAT failed: response holds invalid base64 ...".
std::string unb64(const std::string& text, const std::string& what);

// A key as it may appear in a message: control and non-ASCII bytes as \xNN.
std::string shown(const std::string& key);

// An int64 field (a string or a number); 0 when left out. Throws when it is neither.
std::int64_t i64(const json& obj, const char* field);
bool flag(const json& obj, const char* field);
std::string str(const json& obj, const char* field);

// A header's cluster_id: a uint64, sent as a string ("" when left out).
std::string clusterIdOf(const json& header);

EtcdKeyValue parseKv(const json& kv, const std::string& what);

// A range answer ({"header": {...}, "kvs": [...]}): its kvs in order, and the header's
// revision.
EtcdRange parseRange(const json& answer, const std::string& what);

// The message of an error body; "" when it holds none.
std::string gatewayMessage(const json& body);
// The same of a body as sent: its message, else its first 200 bytes.
std::string gatewayMessage(const std::string& raw);
// The gRPC code of an error body; -1 when it holds none.
std::int64_t gatewayCode(const json& body);

}  // namespace mesh::fleet::etcd
