// A reviewed plan, applied exactly (`mesh-host plan DECL --out PLAN`, then `mesh-host
// apply --plan PLAN`): the plan file records the declaration (its path, digest and
// text), the node, and for each resource what the plan found and intended — the
// outcome it would have, and a fingerprint of everything the plan said about it
// (outcome, reason, detail, diff, what it would hold, what it would do to the service;
// for a credential, whose value is never shown, not what it would hold).
// Before applying, the plan is made again under the state lock: the fingerprint of a
// resource whose machine state moved since (a file edited, a service stopped) differs,
// and so does the set of resources when the declaration or the records changed. Any
// difference refuses the apply, which then does nothing. docs/operating.md describes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apply/cycle.hh"

namespace mesh::apply {

inline constexpr std::string_view kPlanFileType = "mesh-host plan v1";

struct PlannedResource {
  std::string id;
  std::string kind;
  std::string outcome;      // "created", "updated", … as the plan said
  std::string fingerprint;  // "sha256:…" of everything the plan said about it
  bool operator==(const PlannedResource&) const = default;
};

struct PlanFile {
  std::string node;
  std::string root;
  std::string declarationPath;    // absolute
  std::string declarationDigest;  // "sha256:…" of its exact bytes
  std::string declaration;        // its exact bytes
  std::string version;            // mesh-host's, which made the plan
  int64_t plannedAtMs = 0;
  std::vector<PlannedResource> resources;  // in the plan's order
};

// What a plan said about each resource of `report`.
std::vector<PlannedResource> plannedResources(const CycleReport& report);

std::string encodePlanFile(const PlanFile& p);
// Throws InputError naming `where` when `text` is not a plan file.
PlanFile decodePlanFile(std::string_view text, const std::string& where);

// What moved between `planned` and `now` (the same plan made again): one line per
// resource ("m.config: planned updated (…), now unchanged"), none when they agree.
std::vector<std::string> planDifferences(const std::vector<PlannedResource>& planned,
                                         const std::vector<PlannedResource>& now);

}  // namespace mesh::apply
