#include "fleet/node_signed.hh"

#include <nlohmann/json.hpp>
#include <optional>

#include "fleet/json_value.hh"
#include "util/error.hh"
#include "util/text_safe.hh"

namespace mesh::fleet {

using json = nlohmann::json;

namespace {
constexpr const char* kSignatureField = "signature";
}  // namespace

std::string nodePrefix(const FleetKeys& keys, const std::string& node) {
  return keys.nodesPrefix() + node + "/";
}
std::string heartbeatKey(const FleetKeys& keys, const std::string& node) {
  return nodePrefix(keys, node) + "heartbeat";
}
std::string enrollmentKey(const FleetKeys& keys, const std::string& node) {
  return nodePrefix(keys, node) + "enrollment";
}

std::string signNodeJson(std::string_view jsonObject, const trust::NodeKey& key) {
  json j = json::parse(jsonObject);
  j.erase(kSignatureField);
  const std::string signedText = jsonData(j);
  j[kSignatureField] = key.sign(signedText);
  return jsonData(j);
}

namespace {

// The text as signNodeJson writes it is the signed dump with a "signature" member among
// its sorted keys: cut that member out and the signed bytes are left, with no JSON parsed
// and dumped again (a `fleet status` of 10,000 nodes checks 10,000 statuses). `signature`
// receives the member's value; nullopt when there is no such member to cut.
std::optional<std::string> cutSignature(std::string_view text, std::string_view& signature) {
  constexpr std::string_view kMember = "\"signature\":\"";
  const auto at = text.find(kMember);
  if (at == std::string_view::npos) return std::nullopt;
  const auto from = at + kMember.size();
  const auto end = text.find('"', from);
  if (end == std::string_view::npos) return std::nullopt;
  signature = text.substr(from, end - from);
  std::string out;
  if (at > 0 && text[at - 1] == ',')
    out.append(text.substr(0, at - 1)).append(text.substr(end + 1));
  else if (end + 1 < text.size() && text[end + 1] == ',')
    out.append(text.substr(0, at)).append(text.substr(end + 2));
  else
    out.append(text.substr(0, at)).append(text.substr(end + 1));
  return out;
}

}  // namespace

NodeSignature checkNodeJson(std::string_view text, const trust::NodePublicKey& key, json* parsed) {
  // What the node wrote, as it wrote it: only the bytes it signed are parsed then.
  std::string_view cutValue;
  if (const auto signedBytes = cutSignature(text, cutValue);
      signedBytes && trust::nodeSignatureMatches(key, *signedBytes, cutValue)) {
    json j = parseEtcdJson(*signedBytes);
    if (j.is_object() && !j.contains(kSignatureField)) {
      if (parsed) *parsed = std::move(j);
      return NodeSignature::Valid;
    }
  }
  json j = parseEtcdJson(text);
  if (!j.is_object()) return NodeSignature::Invalid;
  auto it = j.find(kSignatureField);
  if (it == j.end()) return NodeSignature::Unsigned;
  if (!it->is_string()) return NodeSignature::Invalid;
  const std::string signature = it->get<std::string>();
  j.erase(kSignatureField);
  const bool valid = trust::nodeSignatureMatches(key, jsonData(j), signature);
  if (valid && parsed) *parsed = std::move(j);
  return valid ? NodeSignature::Valid : NodeSignature::Invalid;
}

namespace {

// Reads a JSON text as json::parse would accept it, keeping nothing but the top-level
// "node" and "cluster" strings and whether there is a top-level "signature": false (the
// parse stops) for anything but an object at the top.
class PickSignedFor final : public json::json_sax_t {
 public:
  explicit PickSignedFor(SignedFor& out) : out_(out) {}
  bool hasSignature = false;

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(json::number_integer_t) override { return scalar(); }
  bool number_unsigned(json::number_unsigned_t) override { return scalar(); }
  bool number_float(json::number_float_t, const json::string_t&) override { return scalar(); }
  bool binary(json::binary_t&) override { return scalar(); }
  bool string(json::string_t& v) override {
    if (depth_ == 1 && target_) *target_ = v;
    return scalar();
  }
  bool start_object(std::size_t) override {
    if (depth_ == 0 && started_) return false;
    started_ = true;
    target_ = nullptr;
    ++depth_;
    return true;
  }
  bool key(json::string_t& k) override {
    if (depth_ != 1) return true;
    target_ = k == "node" ? &out_.node : k == "cluster" ? &out_.cluster : nullptr;
    if (target_) target_->clear();  // the last of a key given twice counts, string or not
    if (k == "signature") hasSignature = true;
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 0) return false;
    target_ = nullptr;
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool scalar() {
    target_ = nullptr;
    return depth_ > 0;  // a bare value at the top is not an object
  }
  SignedFor& out_;
  std::string* target_ = nullptr;
  int depth_ = 0;
  bool started_ = false;
};

std::string stringField(const json& j, const char* name) {
  const auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

NodeSignature checkNodeJson(std::string_view text, const trust::NodePublicKey& key,
                            SignedFor& signedFor) {
  std::string_view cutValue;
  if (const auto signedBytes = cutSignature(text, cutValue);
      signedBytes && trust::nodeSignatureMatches(key, *signedBytes, cutValue)) {
    SignedFor picked;
    PickSignedFor pick(picked);
    if (json::sax_parse(*signedBytes, &pick) && !pick.hasSignature) {
      signedFor = std::move(picked);
      return NodeSignature::Valid;
    }
  }
  // Anything else as the tree reads it (a text not written as signNodeJson writes it).
  json j;
  const auto verdict = checkNodeJson(text, key, &j);
  if (verdict == NodeSignature::Valid)
    signedFor = {stringField(j, "node"), stringField(j, "cluster")};
  return verdict;
}

std::string encodeHeartbeat(const Heartbeat& h) {
  json j{{"node", h.node}, {"cluster", h.cluster}, {"pid", h.pid}, {"at_ms", h.atMs}};
  if (h.lease != 0) j["lease"] = h.lease;
  return jsonData(j);
}

Heartbeat decodeHeartbeat(std::string_view text, const std::string& where) {
  const json j = parseEtcdJson(text);
  if (!j.is_object() || !j.contains("node") || !j["node"].is_string())
    throw InputError("{}: not a heartbeat (expected a JSON object with \"node\")", where);
  try {
    Heartbeat h;
    h.node = j.at("node").get<std::string>();
    h.cluster = j.value("cluster", std::string());
    h.pid = j.value("pid", int64_t{0});
    h.atMs = j.value("at_ms", int64_t{0});
    h.lease = j.value("lease", int64_t{0});
    return h;
  } catch (const json::exception&) {
    throw InputError("{}: a heartbeat field has the wrong type", where);
  }
}

}  // namespace mesh::fleet
