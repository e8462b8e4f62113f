#include "trust/replay.hh"

namespace mesh::trust {

Replay judgeReplay(std::optional<int64_t> serial, const std::string& digest,
                   const ReplayFloor& floor) {
  if (!floor.serial) return Replay::Newer;
  if (!serial) return Replay::Unserialed;
  if (*serial > *floor.serial) return Replay::Newer;
  if (*serial < *floor.serial) return Replay::Older;
  if (!floor.digest.empty() && digest != floor.digest) return Replay::Conflict;
  return Replay::Same;
}

}  // namespace mesh::trust
