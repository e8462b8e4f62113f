// Why the last cycle could not run, in <stateDir>/last-error until a cycle
// finishes (Store::finishCycle removes it): a cycle that fails before it starts
// (the store cannot be opened, or is damaged) leaves no cycle row, so this file
// is what `status` shows it by.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mesh::state {

struct CycleError {
  int64_t at = 0;  // unix ms of the latest failure
  std::string message;
};
// Writes <stateDir>/last-error atomically. Never throws: failing to note an
// error must not hide the error itself.
// It is written in place into <stateDir>/last-error.page (4 KiB, made by
// prepareErrorPage while there is room), so that a full state directory does not
// silence it; into last-error (atomically) only when the page cannot be had.
void noteCycleError(const std::string& stateDir, const std::string& message) noexcept;
// Makes last-error.page when missing (a read-write open of the store does).
void prepareErrorPage(const std::string& stateDir) noexcept;
std::optional<CycleError> lastCycleError(const std::string& stateDir);
void clearCycleError(const std::string& stateDir);

}  // namespace mesh::state
