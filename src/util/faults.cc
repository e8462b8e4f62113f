#include "util/faults.hh"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace mesh {

namespace {
CrashHook crashHook = nullptr;
WriteFaultHook writeFaultHook = nullptr;
}  // namespace

void setWriteFaultHook(WriteFaultHook hook) {
  writeFaultHook = hook;
}

int writeFault(const char* shown) {
  return writeFaultHook ? writeFaultHook(shown) : 0;
}

bool faultSet(const char* seam) {
  static const char* set = std::getenv("MESH_HOST_FAULT");
  return set && std::strcmp(set, seam) == 0;
}

void setCrashHook(CrashHook hook) {
  crashHook = hook;
}

void crashPoint(const char* name) {
  if (crashHook) crashHook(name);
  static const char* wanted = std::getenv("MESH_HOST_CRASH_AT");
  if (wanted && std::strcmp(wanted, name) == 0) ::_exit(kCrashExitCode);
}

}  // namespace mesh
