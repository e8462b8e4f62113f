#include "fleet/etcd/gateway_codec.hh"

#include <fmt/format.h>

#include <charconv>
#include <utility>

#include "util/base64.hh"
#include "util/error.hh"
#include "util/text_safe.hh"

namespace mesh::fleet::etcd {

std::string b64(const std::string& bytes) {
  return base64Encode(bytes);
}

std::string unb64(const std::string& text, const std::string& what) {
  auto out = base64DecodePublic(text);
  if (!out)
    throw Error("etcd {} failed: response holds invalid base64 '{}'", what, text.substr(0, 64));
  return std::move(*out);
}

std::string shown(const std::string& key) {
  std::string out;
  for (unsigned char c : key) {
    if (c >= 0x20 && c < 0x7f)
      out += static_cast<char>(c);
    else
      out += fmt::format("\\x{:02x}", c);
  }
  return out;
}

std::int64_t i64(const json& obj, const char* field) {
  if (!obj.is_object()) return 0;
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return 0;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_string()) {
    const auto& s = it->get_ref<const std::string&>();
    std::int64_t n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec == std::errc() && end == s.data() + s.size()) return n;
  }
  throw Error("etcd response field {} is not an integer: {}", field, jsonData(*it));
}

bool flag(const json& obj, const char* field) {
  if (!obj.is_object()) return false;
  auto it = obj.find(field);
  return it != obj.end() && it->is_boolean() && it->get<bool>();
}

std::string str(const json& obj, const char* field) {
  if (!obj.is_object()) return {};
  auto it = obj.find(field);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string clusterIdOf(const json& header) {
  if (!header.is_object()) return {};
  auto it = header.find("cluster_id");
  if (it == header.end() || it->is_null()) return {};
  return it->is_string() ? it->get<std::string>() : jsonData(*it);
}

EtcdKeyValue parseKv(const json& kv, const std::string& what) {
  EtcdKeyValue out;
  out.key = unb64(str(kv, "key"), what);
  out.value = unb64(str(kv, "value"), what);
  out.modRevision = i64(kv, "mod_revision");
  out.createRevision = i64(kv, "create_revision");
  out.lease = i64(kv, "lease");
  return out;
}

EtcdRange parseRange(const json& answer, const std::string& what) {
  EtcdRange out;
  out.revision = i64(answer.value("header", json::object()), "revision");
  if (auto kvs = answer.find("kvs"); kvs != answer.end() && kvs->is_array())
    for (const auto& kv : *kvs) out.kvs.push_back(parseKv(kv, what));
  return out;
}

std::string gatewayMessage(const json& body) {
  if (!body.is_object()) return {};
  if (auto m = str(body, "message"); !m.empty()) return m;
  auto it = body.find("error");
  if (it == body.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (auto m = str(*it, "message"); !m.empty()) return m;
  return jsonData(*it);
}

std::string gatewayMessage(const std::string& raw) {
  auto body = json::parse(raw, nullptr, false);
  auto m = gatewayMessage(body);
  if (!m.empty()) return m;
  return raw.substr(0, 200);
}

std::int64_t gatewayCode(const json& body) {
  if (!body.is_object()) return -1;
  if (body.contains("code")) return i64(body, "code");
  auto it = body.find("error");
  if (it != body.end() && it->is_object()) return i64(*it, "grpc_code");
  return -1;
}

}  // namespace mesh::fleet::etcd
