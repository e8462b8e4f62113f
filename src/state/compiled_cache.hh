// The compiled-declaration cache (util/compiled_cache.hh) as the state store keeps
// it: one form, in the store's compiled_declaration table (state/store/compiled.cc).
// A read takes no lock and writes nothing (Store::readCompiledDeclaration), so a
// declaration is loaded before the state lock is taken, and a bad one leaves the
// state directory as it was. What the loader offers to keep is therefore held
// until the store is open for writing, under the lock: keepIn puts it there.
#pragma once

#include <string>

#include "util/compiled_cache.hh"

namespace mesh::state {

class Store;

class StoredCompiledCache final : public CompiledCache {
 public:
  explicit StoredCompiledCache(std::string stateDir) : stateDir_(std::move(stateDir)) {}

  void read(const std::string& key, const std::function<void(const FormSource&)>& use) override;
  // Held, not written (see above).
  void keep(const std::string& key, std::string form) override;

  // Puts the form offered last into `store` (Store::putCompiledDeclaration: never
  // throws), and lets go of it; nothing when none was. A plan, which writes
  // nothing, never calls it.
  void keepIn(Store& store);

 private:
  std::string stateDir_;
  std::string key_, form_;  // key "": nothing to keep
};

}  // namespace mesh::state
