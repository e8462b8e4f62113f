#include "fleet/report.hh"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>

#include "fleet/json_value.hh"
#include "util/error.hh"
#include "util/text_safe.hh"

namespace mesh::fleet {

using nlohmann::json;

namespace {

// Room left for the "signature" member signNodeJson adds (~100 bytes) and some slack.
constexpr std::size_t kSignatureRoom = 512;
// A diff is first cut to this, then to halves of it, until the report fits.
constexpr std::size_t kFirstDiffCap = 32 * 1024;

json optionalInt(const std::optional<int64_t>& v) {
  return v ? json(*v) : json(nullptr);
}

json toJson(const NodeReport& r) {
  json outcomes = json::array();
  for (const auto& o : r.outcomes)
    outcomes.push_back({{"id", o.id},
                        {"kind", o.kind},
                        {"outcome", o.outcome},
                        {"reason", o.reason},
                        {"detail", o.detail},
                        {"restarted", o.restarted},
                        {"diff", o.diff},
                        {"diff_cut", o.diffCut}});
  json applied = json::array();
  for (const auto& a : r.applied)
    applied.push_back({{"serial", optionalInt(a.serial)},
                       {"declaration_digest", a.declarationDigest},
                       {"cycle", a.cycle},
                       {"at_ms", a.atMs}});
  return {{"type", kReportType},
          {"node", r.node},
          {"cluster", r.cluster},
          {"cycle", r.cycle},
          {"at_ms", r.atMs},
          {"serial", optionalInt(r.serial)},
          {"declaration_digest", r.declarationDigest},
          {"summary",
           {{"created", r.created},
            {"updated", r.updated},
            {"unchanged", r.unchanged},
            {"removed", r.removed},
            {"released", r.released},
            {"skipped", r.skipped},
            {"failed", r.failed}}},
          {"outcomes", std::move(outcomes)},
          {"cut", r.cut},
          {"applied", std::move(applied)}};
}

template <class T>
T field(const json& j, const char* name, T fallback, const std::string& where) {
  const auto it = j.find(name);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw InputError("{}: not a node report (\"{}\" has the wrong type)", where, name);
  }
}

std::optional<int64_t> optionalField(const json& j, const char* name, const std::string& where) {
  const auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return field<int64_t>(j, name, 0, where);
}

const json& objects(const json& j, const char* name, const std::string& where) {
  static const json empty = json::array();
  const auto it = j.find(name);
  if (it == j.end() || it->is_null()) return empty;
  if (!it->is_array() ||
      !std::all_of(it->begin(), it->end(), [](const json& e) { return e.is_object(); }))
    throw InputError("{}: not a node report (\"{}\" is not a list of objects)", where, name);
  return *it;
}

// Cuts `s` to at most `max` bytes, never inside a UTF-8 sequence.
void cutText(std::string& s, std::size_t max) {
  if (s.size() <= max) return;
  std::size_t at = max;
  while (at > 0 && (static_cast<unsigned char>(s[at]) & 0xc0) == 0x80) --at;
  s.resize(at);
}

}  // namespace

std::string reportsPrefix(const FleetKeys& keys) {
  return "/mesh/" + keys.cluster + "/reports/";
}

std::string reportKey(const FleetKeys& keys, const std::string& node) {
  return reportsPrefix(keys) + node;
}

bool saysNothingNew(const NodeReport& last, const NodeReport& now) {
  auto strip = [](NodeReport r) {
    r.cycle = 0;
    r.atMs = 0;
    r.applied.clear();
    return r;
  };
  if (strip(last) == strip(now)) return true;
  if (last.serial != now.serial || last.declarationDigest != now.declarationDigest) return false;
  using Failure = std::tuple<std::string, std::string, std::string>;
  auto failures = [](const NodeReport& r, bool* other) {
    std::vector<Failure> out;
    for (const auto& o : r.outcomes)
      if (o.outcome == "failed" || o.outcome == "skipped")
        out.emplace_back(o.id, o.outcome, o.reason);
      else if (other)
        *other = true;
    return out;
  };
  bool changed = false;
  const auto nowFailing = failures(now, &changed);
  return !changed && !nowFailing.empty() && nowFailing == failures(last, nullptr);
}

void carryHistory(NodeReport& r, const std::optional<NodeReport>& previous) {
  if (previous && previous->node == r.node && previous->cluster == r.cluster)
    r.applied = previous->applied;
  const bool same = !r.applied.empty() && r.applied.back().serial == r.serial &&
                    r.applied.back().declarationDigest == r.declarationDigest;
  if (!same) r.applied.push_back({r.serial, r.declarationDigest, r.cycle, r.atMs});
  if (r.applied.size() > kReportHistory)
    r.applied.erase(r.applied.begin(), r.applied.end() - kReportHistory);
}

std::string encodeReport(NodeReport r) {
  const std::size_t budget = kReportMaxBytes - kSignatureRoom;
  std::string text = jsonData(toJson(r));
  if (text.size() <= budget) return text;
  // Diffs first: each cut to a cap that halves until the report fits.
  for (std::size_t cap = kFirstDiffCap; text.size() > budget; cap /= 2) {
    for (auto& o : r.outcomes)
      if (o.diff.size() > cap) {
        cutText(o.diff, cap);
        o.diffCut = true;
      }
    r.cut = "diffs cut to fit the report's 256 KiB";
    text = jsonData(toJson(r));
    if (cap == 0) break;
  }
  // Then outcomes, from the end (reasons and ids can be long too).
  const std::size_t all = r.outcomes.size();
  while (text.size() > budget && !r.outcomes.empty()) {
    r.outcomes.resize(r.outcomes.size() * 3 / 4);
    r.cut = fmt::format("diffs cut and {} of {} outcome(s) left out to fit the report's 256 KiB",
                        all - r.outcomes.size(), all);
    text = jsonData(toJson(r));
  }
  return text;
}

NodeReport decodeReport(std::string_view text, const std::string& where) {
  const json j = parseEtcdJson(text);
  if (!j.is_object()) throw InputError("{}: not a node report (not a JSON object)", where);
  if (field<std::string>(j, "type", "", where) != kReportType)
    throw InputError("{}: not a node report (its \"type\" is not \"{}\")", where, kReportType);
  NodeReport r;
  r.node = field<std::string>(j, "node", "", where);
  r.cluster = field<std::string>(j, "cluster", "", where);
  r.cycle = field<int64_t>(j, "cycle", 0, where);
  r.atMs = field<int64_t>(j, "at_ms", 0, where);
  r.serial = optionalField(j, "serial", where);
  r.declarationDigest = field<std::string>(j, "declaration_digest", "", where);
  const json summary = field<json>(j, "summary", json::object(), where);
  if (!summary.is_object()) throw InputError("{}: not a node report (\"summary\")", where);
  r.created = field<int64_t>(summary, "created", 0, where);
  r.updated = field<int64_t>(summary, "updated", 0, where);
  r.unchanged = field<int64_t>(summary, "unchanged", 0, where);
  r.removed = field<int64_t>(summary, "removed", 0, where);
  r.released = field<int64_t>(summary, "released", 0, where);
  r.skipped = field<int64_t>(summary, "skipped", 0, where);
  r.failed = field<int64_t>(summary, "failed", 0, where);
  for (const auto& o : objects(j, "outcomes", where))
    r.outcomes.push_back(
        {field<std::string>(o, "id", "", where), field<std::string>(o, "kind", "", where),
         field<std::string>(o, "outcome", "", where), field<std::string>(o, "reason", "", where),
         field<std::string>(o, "detail", "", where), field<bool>(o, "restarted", false, where),
         field<std::string>(o, "diff", "", where), field<bool>(o, "diff_cut", false, where)});
  r.cut = field<std::string>(j, "cut", "", where);
  for (const auto& a : objects(j, "applied", where))
    r.applied.push_back(
        {optionalField(a, "serial", where), field<std::string>(a, "declaration_digest", "", where),
         field<int64_t>(a, "cycle", 0, where), field<int64_t>(a, "at_ms", 0, where)});
  return r;
}

}  // namespace mesh::fleet
