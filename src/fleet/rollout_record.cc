#include "fleet/rollout_record.hh"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "fleet/json_value.hh"
#include "trust/signing.hh"
#include "util/error.hh"
#include "util/text_safe.hh"

namespace mesh::fleet {

namespace {

using json = nlohmann::json;

constexpr RolloutState kStates[] = {RolloutState::Running, RolloutState::Halted, RolloutState::Done,
                                    RolloutState::Aborted, RolloutState::Reverted};

std::string recordText(const RolloutRecord& r) {
  json previous = json::object();
  for (const auto& [node, p] : r.previous)
    previous[node] = {{"digest", p.digest}, {"serial", p.serial ? json(*p.serial) : json(nullptr)}};
  const auto& o = r.options;
  return jsonData(json{{"type", kRolloutRecordType},
                       {"serial", r.serial},
                       {"digest", r.digest},
                       {"declaration", r.declaration},
                       {"pushed_by", r.pushedBy},
                       {"started_at_ms", r.startedAtMs},
                       {"updated_at_ms", r.updatedAtMs},
                       {"state", rolloutStateName(r.state)},
                       {"wave", r.wave},
                       {"waves", r.waves},
                       {"reason", r.reason},
                       {"options",
                        {{"canary", o.canary},
                         {"wave", o.wave},
                         {"min_healthy_ms", o.minHealthyMs},
                         {"healthy_deadline_ms", o.healthyDeadlineMs},
                         {"auto_revert", o.autoRevert},
                         {"max_parallel_restarts", o.maxParallelRestarts}}},
                       {"previous", std::move(previous)},
                       {"revert_serial", r.revertSerial ? json(*r.revertSerial) : json(nullptr)},
                       {"driver", r.driver}});
}

}  // namespace

std::string rolloutKey(const FleetKeys& keys) {
  return "/mesh/" + keys.cluster + "/rollout";
}

std::string rolloutDriverKey(const FleetKeys& keys) {
  return "/mesh/" + keys.cluster + "/rollout-driver";
}

const char* rolloutStateName(RolloutState s) {
  switch (s) {
    case RolloutState::Running:
      return "running";
    case RolloutState::Halted:
      return "halted";
    case RolloutState::Done:
      return "done";
    case RolloutState::Aborted:
      return "aborted";
    case RolloutState::Reverted:
      return "reverted";
  }
  return "?";
}

std::string rolloutLine(const RolloutRecord& r) {
  std::string line =
      fmt::format("rollout of serial {}: wave {} of {}{}, {}", r.serial, r.wave + 1, r.waves.size(),
                  r.wave == 0 ? " (canary)" : "", rolloutStateName(r.state));
  if (!r.reason.empty()) line += ": " + r.reason;
  if (r.revertSerial) line += fmt::format("; reverted with serial {}", *r.revertSerial);
  return line;
}

std::string encodeRolloutRecord(const RolloutRecord& r, const trust::OperatorKey& key) {
  const std::string text = recordText(r);
  return jsonData(json{{"record", text}, {"signature", trust::signatureText(key, text)}});
}

RolloutRecord decodeRolloutText(std::string_view text, const std::string& where) {
  const auto j = parseEtcdJson(text);
  const auto type = j.is_object() ? j.find("type") : j.end();
  if (!j.is_object() || type == j.end() || !type->is_string() || *type != kRolloutRecordType)
    throw InputError("{}: not a rollout record", where);
  try {
    RolloutRecord r;
    r.serial = j.at("serial").get<int64_t>();
    r.digest = j.at("digest").get<std::string>();
    r.declaration = j.at("declaration").get<std::string>();
    r.pushedBy = j.at("pushed_by").get<std::string>();
    r.startedAtMs = j.at("started_at_ms").get<int64_t>();
    r.updatedAtMs = j.at("updated_at_ms").get<int64_t>();
    const auto state = j.at("state").get<std::string>();
    bool known = false;
    for (auto s : kStates)
      if (state == rolloutStateName(s)) {
        r.state = s;
        known = true;
      }
    if (!known) throw InputError("{}: a rollout record in an unknown state '{}'", where, state);
    r.wave = j.at("wave").get<int64_t>();
    r.waves = j.at("waves").get<std::vector<std::vector<std::string>>>();
    if (r.waves.empty() || r.wave < 0 || r.wave >= static_cast<int64_t>(r.waves.size()))
      throw InputError("{}: a rollout record whose wave {} is not one of its {} waves", where,
                       r.wave, r.waves.size());
    r.reason = j.at("reason").get<std::string>();
    const auto& o = j.at("options");
    r.options.canary = o.at("canary").get<int64_t>();
    r.options.wave = o.at("wave").get<std::string>();
    r.options.minHealthyMs = o.at("min_healthy_ms").get<int64_t>();
    r.options.healthyDeadlineMs = o.at("healthy_deadline_ms").get<int64_t>();
    r.options.autoRevert = o.at("auto_revert").get<bool>();
    r.options.maxParallelRestarts = o.at("max_parallel_restarts").get<int64_t>();
    for (const auto& [node, p] : j.at("previous").items()) {
      PreviousDeclaration prev;
      prev.digest = p.at("digest").get<std::string>();
      if (!p.at("serial").is_null()) prev.serial = p.at("serial").get<int64_t>();
      r.previous.emplace(node, std::move(prev));
    }
    if (const auto& rs = j.at("revert_serial"); !rs.is_null()) r.revertSerial = rs.get<int64_t>();
    r.driver = j.at("driver").get<std::string>();
    return r;
  } catch (const json::exception& e) {
    throw InputError("{}: a rollout record with a missing or mistyped field ({})", where, e.what());
  }
}

std::optional<RolloutEntry> readRollout(EtcdClient& etcd, const FleetKeys& keys,
                                        const std::vector<trust::OperatorPublicKey>& trusted) {
  const std::string key = rolloutKey(keys);
  const auto got = etcd.get(key);
  if (!got) return std::nullopt;
  const auto j = parseEtcdJson(got->value);
  const auto field = [&](const char* name) {
    const auto it = j.is_object() ? j.find(name) : j.end();
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string text = field("record");
  RolloutEntry e{decodeRolloutText(text, key), got->modRevision, std::nullopt};
  if (!trusted.empty()) {
    e.verified = false;
    try {
      const auto signer = trust::verifySignedText(key, text, field("signature"), key, trusted);
      e.verified = signer.text() == e.record.pushedBy;
    } catch (const InputError&) {
      // Unsigned, tampered with, or by a key not given: not verified.
    }
  }
  return e;
}

std::optional<RolloutRecord> currentRollout(EtcdClient& etcd, const FleetKeys& keys) {
  try {
    if (auto e = readRollout(etcd, keys, {})) return std::move(e->record);
  } catch (const InputError&) {
    // Not a record: nothing to show.
  }
  return std::nullopt;
}

std::optional<int64_t> putRollout(EtcdClient& etcd, const FleetKeys& keys, const RolloutRecord& r,
                                  int64_t revision, const trust::OperatorKey& key) {
  return etcd.txnPutIfUnchanged(rolloutKey(keys), encodeRolloutRecord(r, key), revision);
}

std::set<std::string> guardAgainstRollout(EtcdClient& etcd, const FleetKeys& keys, bool inRollout) {
  std::optional<RolloutEntry> e;
  try {
    e = readRollout(etcd, keys, {});
  } catch (const InputError&) {
    return {};
  }
  if (!e) return {};
  const auto& r = e->record;
  if (r.state == RolloutState::Running && !inRollout)
    throw Error(
        "a rollout is running ({}; driven by {}): nothing was pushed, a plain push would "
        "overtake it; let it finish, or stop it with mesh-host fleet rollout abort (see fleet "
        "rollout status)",
        rolloutLine(r), r.driver.empty() ? "an unknown process" : r.driver);
  if (r.state != RolloutState::Running && r.state != RolloutState::Halted) return {};
  std::set<std::string> keep{r.digest};
  for (const auto& [node, p] : r.previous)
    if (!p.digest.empty()) keep.insert(p.digest);
  return keep;
}

}  // namespace mesh::fleet
