// A process's `health = { exec = "…", interval = "10s", timeout = "5s" }` (decl/model.hh
// HealthCheck): read and checked at parse, every problem reported at its place.
#pragma once

#include <optional>

#include "decl/fields.hh"
#include "decl/model.hh"

namespace mesh::decl {

// nullopt when `health` is absent or bad (reported through `f`).
std::optional<HealthCheck> readHealth(Fields& f);

// The bounds a health check's times must keep.
inline constexpr int64_t kHealthMinIntervalMs = 1'000;

}  // namespace mesh::decl
