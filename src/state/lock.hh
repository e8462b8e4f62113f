// The state lock (lock.cc says why it is made as it is).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>

#include "util/fd.hh"

namespace mesh::state {

// The live process that holds the state lock exclusively (a cycle, gc, …) as it
// noted itself in <stateDir>/lock; nullopt when none does. Takes no lock: any
// user who may read the state directory may ask.
std::optional<pid_t> stateLockHolder(const std::string& stateDir);

// One writer per state dir: an flock on <stateDir>/locks, a directory only the
// state directory's owner may open (so no other user can take or hold up the
// lock), held for the object's life. An exclusive holder writes its pid to
// <stateDir>/lock (0640), to be named to a waiter and seen by readers. Acquire
// blocks (after saying so on stderr) when another mesh-host holds it.
// A shared lock asked for by a process that may not lock (neither root nor the
// directory's owner: a status reader of its group) is no lock at all — readers
// never take a lock a writer waits for; tryAcquire then answers nullopt while a
// live exclusive holder is noted in <stateDir>/lock, as it would when locking.
class [[nodiscard]] StateLock {
 public:
  enum class Kind { Exclusive, Shared };
  static StateLock acquire(const std::string& stateDir, Kind kind);
  // Non-blocking: nullopt when another process holds it.
  static std::optional<StateLock> tryAcquire(const std::string& stateDir, Kind kind);
  StateLock(StateLock&&) noexcept;
  StateLock& operator=(StateLock&&) noexcept;
  ~StateLock();

 private:
  StateLock(Fd fd, Fd pidFd) : fd_(std::move(fd)), pidFd_(std::move(pidFd)) {}
  Fd fd_;     // <stateDir>/locks, flocked (none: a reader's lock that locks nothing)
  Fd pidFd_;  // <stateDir>/lock, holding our pid (exclusive holders only)
};

}  // namespace mesh::state
