// The agent's declaration file as it is now does not load, so the agent keeps
// converging the node to the last good one: <stateDir>/declaration-error, written
// by the agent when a reload fails and removed when one succeeds or the agent
// stops. `status` shows it (and fails), and so do the metrics.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mesh::state {

struct DeclarationError {
  int64_t at = 0;             // unix ms of the latest failed load
  std::string path;           // the declaration file
  std::string message;        // what is wrong with it (file:line:column …)
  bool keptLastGood = false;  // false: no declaration loaded yet, nothing is applied
};
void noteDeclarationError(const std::string& stateDir, const DeclarationError& e) noexcept;
std::optional<DeclarationError> declarationError(const std::string& stateDir);
void clearDeclarationError(const std::string& stateDir) noexcept;

}  // namespace mesh::state
