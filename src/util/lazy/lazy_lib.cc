#include "util/lazy/lazy_lib.hh"

#include <dlfcn.h>

#include <mutex>

#include "util/error.hh"

namespace mesh::lazy {

namespace {

void* open(const char* soname) {
  // dlopen keeps its own count: the same handle comes back on each call, and the
  // library stays loaded for the process's life (never dlclose'd).
  static std::mutex m;
  std::lock_guard lock(m);
  if (void* h = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL)) return h;
  const char* why = ::dlerror();
  throw Error("cannot load {}: {} (install it: it is one of mesh-host's dependencies)", soname,
              why ? why : "unknown error");
}

}  // namespace

void* symbol(const char* soname, const char* name) {
  void* h = open(soname);
  ::dlerror();
  if (void* f = ::dlsym(h, name)) return f;
  const char* why = ::dlerror();
  throw Error("{} has no {}: {}", soname, name, why ? why : "not found");
}

bool loaded(const char* soname) {
  return ::dlopen(soname, RTLD_NOW | RTLD_NOLOAD) != nullptr;
}

}  // namespace mesh::lazy
