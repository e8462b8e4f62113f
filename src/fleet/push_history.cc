#include "fleet/push_history.hh"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "fleet/json_value.hh"
#include "trust/signing.hh"
#include "util/error.hh"
#include "util/text_safe.hh"

namespace mesh::fleet {

namespace {

using json = nlohmann::json;

std::string recordText(const PushRecord& r) {
  json outcomes = nullptr;
  if (r.outcomes)
    outcomes = {{"applied", r.outcomes->applied},
                {"failed", r.outcomes->failed},
                {"refused", r.outcomes->refused},
                {"timed_out", r.outcomes->timedOut}};
  json j{{"type", kPushRecordType},
         {"digest", r.digest},
         {"serial", r.serial},
         {"pushed_by", r.pushedBy},
         {"pushed_at_ms", r.pushedAtMs},
         {"selector", r.selector},
         {"nodes", r.nodes},
         {"results", {{"pushed", r.pushed}, {"unchanged", r.unchanged}, {"conflict", r.conflict}}},
         {"outcomes", outcomes}};
  if (r.texts > 0) j["texts"] = r.texts;
  if (!r.rollout.empty()) j["rollout"] = r.rollout;
  if (r.revertOf) j["revert_of"] = *r.revertOf;
  return jsonData(j);
}

PushRecord decodeRecordText(const std::string& text, const std::string& where) {
  const auto j = parseEtcdJson(text);
  const auto type = j.is_object() ? j.find("type") : j.end();
  if (!j.is_object() || type == j.end() || !type->is_string() || *type != kPushRecordType)
    throw InputError("{}: not a push record", where);
  try {
    PushRecord r;
    r.digest = j.at("digest").get<std::string>();
    r.serial = j.at("serial").get<int64_t>();
    r.pushedBy = j.at("pushed_by").get<std::string>();
    r.pushedAtMs = j.at("pushed_at_ms").get<int64_t>();
    r.selector = j.at("selector").get<std::string>();
    r.nodes = j.at("nodes").get<int64_t>();
    if (const auto t = j.find("texts"); t != j.end()) r.texts = t->get<int64_t>();
    if (const auto t = j.find("rollout"); t != j.end()) r.rollout = t->get<std::string>();
    if (const auto t = j.find("revert_of"); t != j.end()) r.revertOf = t->get<int64_t>();
    const auto& res = j.at("results");
    r.pushed = res.at("pushed").get<int64_t>();
    r.unchanged = res.at("unchanged").get<int64_t>();
    r.conflict = res.at("conflict").get<int64_t>();
    if (const auto& o = j.at("outcomes"); !o.is_null())
      r.outcomes =
          PushRecord::Outcomes{o.at("applied").get<int64_t>(), o.at("failed").get<int64_t>(),
                               o.at("refused").get<int64_t>(), o.at("timed_out").get<int64_t>()};
    return r;
  } catch (const json::exception& e) {
    throw InputError("{}: a push record with a missing or mistyped field ({})", where, e.what());
  }
}

// Deletes all records but the newest kKeptPushes, in one request: the range from the
// first key to the oldest kept one.
void trim(EtcdClient& etcd, const FleetKeys& keys) {
  const auto all = etcd.keysUnder(keys.pushesPrefix()).kvs;
  if (all.size() <= kKeptPushes) return;
  const auto& oldestKept = all[all.size() - kKeptPushes].key;
  etcd.txn({}, {EtcdOp::del(all.front().key, oldestKept)});
}

}  // namespace

std::string encodePushRecord(const PushRecord& r, const trust::OperatorKey& key) {
  const std::string text = recordText(r);
  return jsonData(json{{"record", text}, {"signature", trust::signatureText(key, text)}});
}

std::pair<std::string, int64_t> recordPush(EtcdClient& etcd, const FleetKeys& keys,
                                           const PushRecord& r, const trust::OperatorKey& key) {
  const std::string recordKey = keys.push(r.pushedAtMs, r.digest);
  const int64_t revision = etcd.put(recordKey, encodePushRecord(r, key));
  trim(etcd, keys);
  return {recordKey, revision};
}

bool updatePushRecord(EtcdClient& etcd, const std::string& recordKey, int64_t revision,
                      const PushRecord& r, const trust::OperatorKey& key) {
  if (revision == 0) return false;
  return etcd.txnPutIfUnchanged(recordKey, encodePushRecord(r, key), revision).has_value();
}

std::vector<PushHistoryEntry> readPushHistory(
    EtcdClient& etcd, const FleetKeys& keys, std::size_t limit,
    const std::vector<trust::OperatorPublicKey>& trusted) {
  auto kvs = etcd.getPrefix(keys.pushesPrefix()).kvs;
  std::reverse(kvs.begin(), kvs.end());  // newest first: keys sort by time
  if (limit > 0 && kvs.size() > limit) kvs.resize(limit);
  std::vector<PushHistoryEntry> out;
  for (const auto& kv : kvs) out.push_back(readPushRecord(kv.key, kv.value, trusted));
  return out;
}

PushHistoryEntry readPushRecord(const std::string& key, std::string_view value,
                                const std::vector<trust::OperatorPublicKey>& trusted) {
  PushHistoryEntry e;
  e.key = key;
  const auto j = parseEtcdJson(value);
  // A field of another type counts as missing (json::value would throw type_error).
  auto field = [&](const char* name) {
    if (!j.is_object()) return std::string();
    const auto it = j.find(name);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string text = field("record");
  const std::string sig = field("signature");
  try {
    e.record = decodeRecordText(text, key);
  } catch (const InputError& err) {
    e.problem = err.what();
  }
  if (!trusted.empty()) {
    e.verified = false;
    if (e.record && !sig.empty()) {
      try {
        const auto signer = trust::verifySignedText(key, text, sig, key, trusted);
        e.verified = signer.text() == e.record->pushedBy;
      } catch (const InputError&) {
        // Unsigned, tampered with, or by a key not given: not verified.
      }
    }
  }
  return e;
}

}  // namespace mesh::fleet
