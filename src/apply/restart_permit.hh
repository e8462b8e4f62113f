// A restart permit: the right to restart one service now, under a fleet-wide limit
// on restarts at once (agent/fleet_link.cc takes the slot). Move-only: one holder,
// and the slot is freed exactly once — by release() or, at the latest, by the
// destructor, so a restart that throws still frees its slot.
#pragma once

#include <functional>
#include <string>
#include <utility>

namespace mesh::apply {

class [[nodiscard]] RestartPermit {
 public:
  // No slot held (no limit): releasing does nothing.
  RestartPermit() = default;
  // Holds a slot that `free` gives back; `free` must not throw.
  explicit RestartPermit(std::function<void()> free) : free_(std::move(free)) {}

  RestartPermit(const RestartPermit&) = delete;
  RestartPermit& operator=(const RestartPermit&) = delete;
  RestartPermit(RestartPermit&& o) noexcept : free_(std::exchange(o.free_, nullptr)) {}
  RestartPermit& operator=(RestartPermit&& o) noexcept {
    if (this != &o) {
      release();
      free_ = std::exchange(o.free_, nullptr);
    }
    return *this;
  }
  ~RestartPermit() { release(); }

  // Frees the slot now (once the restarted service is active again); then nothing.
  void release() {
    if (auto free = std::exchange(free_, nullptr)) free();
  }
  // Whether a slot is still held.
  bool holds() const { return static_cast<bool>(free_); }

 private:
  std::function<void()> free_;
};

// Takes a restart slot for `service`, waiting for one; throws mesh::Error when
// none can be had (that restart then fails and stays owed).
using RestartGate = std::function<RestartPermit(const std::string& service)>;

}  // namespace mesh::apply
