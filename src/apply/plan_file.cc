#include "apply/plan_file.hh"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "util/digest.hh"
#include "util/error.hh"
#include "util/json_depth.hh"
#include "util/text_safe.hh"

namespace mesh::apply {

using json = nlohmann::json;

namespace {

const char* wouldOf(const Outcome& o) {
  switch (o.activation) {
    case Outcome::Activation::Restart:
      return "restart";
    case Outcome::Activation::Start:
      return "start";
    case Outcome::Activation::Reload:
      return "reload";
    case Outcome::Activation::None:
      break;
  }
  return "";
}

std::string text(const json& j, const char* field, const std::string& where) {
  if (!j.contains(field) || !j[field].is_string())
    throw InputError("{}: not a plan file: no \"{}\" text", where, field);
  return j[field].get<std::string>();
}

}  // namespace

std::vector<PlannedResource> plannedResources(const CycleReport& report) {
  std::vector<PlannedResource> out;
  out.reserve(report.results.size());
  for (const auto& r : report.results) {
    const Outcome& o = r.outcome;
    // Sorted keys: the same plan always gives the same bytes. A credential's digest is
    // keyed by the node's key — a plan on a node without one yet uses a key of the
    // moment — and its value is never shown to review: what the plan says of it is its
    // outcome, reason and detail.
    const bool credential = r.kind == "credential";
    const json said = {{"id", r.id},
                       {"kind", r.kind},
                       {"outcome", verdictName(o.verdict())},
                       {"reason", o.reason()},
                       {"detail", o.detail()},
                       {"diff", o.diff},
                       {"wrote", credential ? std::string() : o.held().str()},
                       {"would", wouldOf(o)},
                       {"moved_from", o.movedFrom},
                       {"moved_to", o.movedTo}};
    out.push_back({r.id, r.kind, verdictName(o.verdict()), Digest::ofBytes(jsonData(said)).str()});
  }
  return out;
}

std::string encodePlanFile(const PlanFile& p) {
  json resources = json::array();
  for (const auto& r : p.resources)
    resources.push_back(
        {{"id", r.id}, {"kind", r.kind}, {"outcome", r.outcome}, {"fingerprint", r.fingerprint}});
  return jsonData(json{{"type", kPlanFileType},
                       {"node", p.node},
                       {"root", p.root},
                       {"declaration_path", p.declarationPath},
                       {"declaration_digest", p.declarationDigest},
                       {"declaration", p.declaration},
                       {"version", p.version},
                       {"planned_at_ms", p.plannedAtMs},
                       {"resources", std::move(resources)}},
                  1) +
         "\n";
}

PlanFile decodePlanFile(std::string_view bytes, const std::string& where) {
  // Nested deeper than any plan (copying such a value would recurse off the stack).
  const json j = jsonNestsDeeperThan(bytes) ? json(json::value_t::discarded)
                                            : json::parse(bytes, nullptr, false);
  if (!j.is_object())
    throw InputError("{}: not a plan file (not JSON); make one with mesh-host plan DECL --out {}",
                     where, where);
  const auto type = j.find("type");
  const std::string typeText =
      type != j.end() && type->is_string() ? type->get<std::string>() : std::string();
  if (typeText != kPlanFileType)
    throw InputError("{}: not a plan file of this mesh-host (type \"{}\", expected \"{}\")", where,
                     typeText, kPlanFileType);
  PlanFile p;
  p.node = text(j, "node", where);
  p.root = text(j, "root", where);
  p.declarationPath = text(j, "declaration_path", where);
  p.declarationDigest = text(j, "declaration_digest", where);
  p.declaration = text(j, "declaration", where);
  p.version = text(j, "version", where);
  if (!j.contains("planned_at_ms") || !j["planned_at_ms"].is_number_integer())
    throw InputError("{}: not a plan file: no \"planned_at_ms\"", where);
  p.plannedAtMs = j["planned_at_ms"].get<int64_t>();
  if (!j.contains("resources") || !j["resources"].is_array())
    throw InputError("{}: not a plan file: no \"resources\" list", where);
  for (const auto& r : j["resources"]) {
    if (!r.is_object()) throw InputError("{}: not a plan file: a resource is not an object", where);
    p.resources.push_back({text(r, "id", where), text(r, "kind", where), text(r, "outcome", where),
                           text(r, "fingerprint", where)});
  }
  if (Digest::ofBytes(p.declaration).str() != p.declarationDigest)
    throw InputError("{}: the declaration it carries does not have its digest (edited?)", where);
  return p;
}

std::vector<std::string> planDifferences(const std::vector<PlannedResource>& planned,
                                         const std::vector<PlannedResource>& now) {
  std::map<std::string, const PlannedResource*> byId;
  for (const auto& r : now) byId[r.id] = &r;
  std::vector<std::string> out;
  for (const auto& p : planned) {
    const auto it = byId.find(p.id);
    if (it == byId.end()) {
      out.push_back(fmt::format("{}: planned {}, now not in the plan at all", p.id, p.outcome));
      continue;
    }
    const PlannedResource& n = *it->second;
    if (n.outcome != p.outcome)
      out.push_back(fmt::format("{}: planned {}, now {}", p.id, p.outcome, n.outcome));
    else if (n.fingerprint != p.fingerprint)
      out.push_back(
          fmt::format("{}: planned {}, still {} but not as planned (its state on the "
                      "machine moved: see mesh-host plan)",
                      p.id, p.outcome, n.outcome));
    byId.erase(it);
  }
  for (const auto& [id, r] : byId)
    out.push_back(fmt::format("{}: not in the plan, now {}", id, r->outcome));
  return out;
}

}  // namespace mesh::apply
