// The compiled-declaration cache, as one interface: the declaration loader
// (decl/parse.hh) looks in it before it parses, and offers it the form of what
// it had to parse; the key and the form are decl's (decl/compiled.hh), where they
// are kept is the state store's (state/compiled_cache.hh). It lives here, below
// both layers, so that decl reads it and state implements it without either
// including the other.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace mesh {

// A compiled form where it is kept, read a piece at a time.
struct FormSource {
  size_t size = 0;
  // Copies the n bytes at `offset` into `out`; false when they cannot be read.
  std::function<bool(size_t offset, char* out, size_t n)> read;
};

class CompiledCache {
 public:
  virtual ~CompiledCache() = default;
  // Calls `use` with the form kept under `key`, read in pieces while `use` runs,
  // when there is one; a cache that cannot be read is a miss. Not handed over
  // whole: at 50,000 files the form is 16 MB, which would be held while the
  // model is decoded.
  virtual void read(const std::string& key, const std::function<void(const FormSource&)>& use) = 0;
  // The form of `key`, which the loader had to parse, for the cache to keep.
  virtual void keep(const std::string& key, std::string form) = 0;
};

}  // namespace mesh
