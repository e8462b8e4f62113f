// The declaration in force: the last one that loaded. An edit that breaks the
// file is reported and changes nothing; the agent keeps converging the node to
// the last good declaration until the file is fixed.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "decl/model.hh"

namespace mesh::agent {

class LastGoodDeclaration {
 public:
  // Reads and validates the file; throws mesh::Error (InputError for bad input).
  using Loader = std::function<decl::Declaration(const std::string& path)>;

  LastGoodDeclaration(std::string path, Loader load)
      : path_(std::move(path)), load_(std::move(load)) {}

  struct Reload {
    bool ok = false;
    bool changed = false;  // ok, and its text differs from the one in force before
    std::string error;     // !ok: what is wrong with the file (file:line:column …)
  };
  // Loads the file again; on success it is in force from now on.
  Reload reload();

  // Puts `d`, loaded from the file elsewhere (by the cycle, under the state lock), in
  // force; returns whether it differs from the one in force before.
  bool adopt(decl::Declaration d) {
    const bool changed = !current_ || current_->digest != d.digest;
    current_ = std::move(d);
    return changed;
  }

  // The declaration in force; null until a load has succeeded.
  const decl::Declaration* current() const { return current_ ? &*current_ : nullptr; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  Loader load_;
  std::optional<decl::Declaration> current_;
};

}  // namespace mesh::agent
