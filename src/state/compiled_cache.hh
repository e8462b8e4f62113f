// The compiled-declaration cache (util/compiled_cache.hh) as the state store keeps
// it: one form, in the store's compiled_declaration table (state/store/compiled.cc).
// A read takes no lock and writes nothing (Store::readCompiledDeclaration), so a
// declaration is loaded before the state lock is taken, and a bad one leaves the
// state directory as it was. What the loader had to parse is therefore kept once
// the store is open for writing, under the lock: keepIn puts its form there.
#pragma once

#include <string>

#include "util/compiled_cache.hh"

namespace mesh::state {

class Store;

class StoredCompiledCache final : public CompiledCache {
 public:
  explicit StoredCompiledCache(std::string stateDir) : stateDir_(std::move(stateDir)) {}

  void read(const std::string& key, const std::function<void(const FormSource&)>& use) override;
  // Noted, nothing written (see above).
  void missed(const std::string& key) override { key_ = key; }

  // Puts the form `write` writes under the key missed last into `store`
  // (Store::putCompiledDeclaration: a piece at a time, never throws); nothing
  // when none was missed. A plan, which writes nothing, never calls it.
  void keepIn(Store& store, const FormWriter& write);

 private:
  std::string stateDir_;
  std::string key_;  // "": nothing to keep
};

}  // namespace mesh::state
