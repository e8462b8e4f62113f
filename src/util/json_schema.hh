// The version of every JSON object mesh-host prints (`"schema": 1`): fields may be added
// within a version; one is renamed, removed or changes meaning only with a new version
// (docs/json.md).
#pragma once

namespace mesh {

inline constexpr int kJsonSchema = 1;

}  // namespace mesh
