#include "state/declaration_error.hh"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "state/state_dir.hh"
#include "util/error.hh"
#include "util/fs.hh"
#include "util/text_safe.hh"

namespace mesh::state {

namespace {

std::string declarationErrorPath(const std::string& stateDir) {
  return StateDir{stateDir}.declarationError();
}

}  // namespace

// The file: a JSON object {at, path, message, kept_last_good}.
void noteDeclarationError(const std::string& stateDir, const DeclarationError& e) noexcept {
  try {
    if (!lstatPath(stateDir)) return;
    const nlohmann::json j = {
        {"at", e.at}, {"path", e.path}, {"message", e.message}, {"kept_last_good", e.keptLastGood}};
    atomicWrite(declarationErrorPath(stateDir), jsonData(j) + "\n", 0640);
  } catch (...) {
  }
}

std::optional<DeclarationError> declarationError(const std::string& stateDir) {
  std::optional<std::string> text;
  try {
    text = readFile(declarationErrorPath(stateDir));
  } catch (const SysError&) {
    return std::nullopt;
  }
  if (!text) return std::nullopt;
  DeclarationError e;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    e.message = "(" + declarationErrorPath(stateDir) + " is damaged)";
    return e;
  }
  e.at = j.value("at", int64_t{0});
  e.path = j.value("path", "");
  e.message = j.value("message", "");
  e.keptLastGood = j.value("kept_last_good", false);
  return e;
}

void clearDeclarationError(const std::string& stateDir) noexcept {
  (void)::unlink(declarationErrorPath(stateDir).c_str());
}

}  // namespace mesh::state
