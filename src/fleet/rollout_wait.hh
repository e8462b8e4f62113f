// A rollout's wait for one wave (fleet/rollout.hh): watches the nodes' statuses until every
// node of the wave is healthy for the rollout (fleet/rollout_judge.hh), one halts it, the
// wave's --healthy-deadline passes, or `stillOurs` says the rollout was taken from the
// driver (aborted). A status counts only when it verifies against the node's enrollment
// signed by one of `trusted`, as for `push --wait`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fleet/etcd.hh"
#include "fleet/push.hh"
#include "fleet/rollout_record.hh"

namespace mesh::fleet {

struct WaveOutcome {
  enum class Kind { Healthy, Halted, Aborted };
  Kind kind = Kind::Healthy;
  std::string reason;  // Halted: why ("web-3 restarted web.service 2 time(s)")
};

// `stillOurs` is called at least every couple of seconds (the driver renews its lock there
// and reads the record); false ends the wait as Aborted. `say` is told each node once it
// is healthy.
WaveOutcome waitForWave(EtcdClient& etcd, const FleetKeys& keys, const PushReport& wave,
                        const RolloutOptions& options,
                        const std::vector<trust::OperatorPublicKey>& trusted,
                        const std::function<bool()>& stillOurs,
                        const std::function<void(const std::string&)>& say);

}  // namespace mesh::fleet
