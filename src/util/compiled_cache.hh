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
#include <string_view>

namespace mesh {

// A compiled form where it is kept, read a piece at a time.
struct FormSource {
  size_t size = 0;
  // Copies the n bytes at `offset` into `out`; false when they cannot be read.
  std::function<bool(size_t offset, char* out, size_t n)> read;
};

// Writes a form to `sink` a piece at a time and returns its size; given no sink,
// only its size.
using FormWriter = std::function<size_t(const std::function<void(std::string_view)>& sink)>;

class CompiledCache {
 public:
  virtual ~CompiledCache() = default;
  // Calls `use` with the form kept under `key`, read in pieces while `use` runs,
  // when there is one; a cache that cannot be read is a miss. Not handed over
  // whole: at 50,000 files the form is 16 MB, which would be held while the
  // model is decoded.
  virtual void read(const std::string& key, const std::function<void(const FormSource&)>& use) = 0;
  // The loader had to parse the text of `key`: the form of the declaration it
  // returns is for the cache to keep, written then by whoever holds it
  // (state/compiled_cache.hh) — not made here, where it would be held whole
  // (22 MB at 100,000 files) beside the model through the cycle.
  virtual void missed(const std::string& key) = 0;
};

}  // namespace mesh
