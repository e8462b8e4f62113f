// The one replay rule. A signed declaration carries a serial; a node holds the
// highest serial it applied or accepted (the floor), and a push the highest it
// pushed. One pure judgement serves `apply`, the node taking a push, and the
// operator pushing; each words the refusal for its own reader.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mesh::trust {

// The highest serial taken, and the digest of that declaration ("" not known:
// an equal serial is then taken for the same content).
struct ReplayFloor {
  std::optional<int64_t> serial;
  std::string digest;
};

enum class Replay {
  Newer,       // above the floor, or no floor yet: may be taken
  Same,        // the floor's serial with its content: nothing new, not a replay
  Older,       // below the floor: a replay, refused
  Conflict,    // the floor's serial with other content: refused
  Unserialed,  // no serial although one was taken: refused
};

// `serial` and `digest`: what the declaration at hand says.
Replay judgeReplay(std::optional<int64_t> serial, const std::string& digest,
                   const ReplayFloor& floor);

}  // namespace mesh::trust
