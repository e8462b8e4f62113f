// FleetLink: fleet-wide restart slots (fleet/restart_slots.hh) — a restart gate for the
// cycle, and the slots an earlier agent of this node left, released.
#include "agent/fleet_link.hh"

#include <memory>

#include <fmt/format.h>

#include "fleet/restart_slots.hh"
#include "util/duration.hh"

namespace mesh::agent {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

void FleetLink::releaseStaleSlots() {
  try {
    for (const auto& key : slots_->releaseStale())
      log_.info("released restart slot " + key + ", left by an earlier agent of this node",
                {{"slot", key}});
  } catch (const Error& e) {
    log_.log(Level::Warning, std::string("cannot release the restart slots an earlier agent "
                                         "of this node left: ") +
                                 e.what() + " (they free themselves within the slot bound)");
  }
}

apply::RestartGate FleetLink::restartGate(int64_t limit, std::chrono::milliseconds timeout,
                                          const std::atomic<bool>* stop) {
  if (limit <= 0) return {};
  return [this, limit, timeout, stop](const std::string& service) -> apply::RestartPermit {
    const auto started = Clock::now();
    auto slot =
        std::make_shared<fleet::RestartSlots::Slot>(slots_->acquire(service, limit, timeout, stop));
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
    log_.info(fmt::format("restart slot {} taken for {} (at most {} at once, waited {})",
                          slot->key(), service, limit, formatDuration(waited)),
              {{"service", service}, {"slot", slot->key()}, {"waited_ms", waited.count()}});
    return apply::RestartPermit([this, slot, service] {
      try {
        slot->release();
      } catch (const Error& e) {
        log_.log(Level::Warning, fmt::format("releasing the restart slot of {}: {} (it frees "
                                             "itself when its lease expires)",
                                             service, e.what()));
      }
    });
  };
}

}  // namespace mesh::agent
