// Fault injection for crash tests. Compiled into every build and inert unless
// MESH_HOST_CRASH_AT names a point: then reaching that point ends the process at
// once with exit code 86 (no destructors, no flushing — as a crash would).
#pragma once

namespace mesh {

inline constexpr int kCrashExitCode = 86;

// Named points, in the order a cycle reaches them.
namespace crash {
// A file's new content is written and synced under its temp name, not yet renamed.
inline constexpr const char* kBeforeRename = "before-rename";
inline constexpr const char* kAfterChangeRecorded = "after-change-recorded";
inline constexpr const char* kAfterUnitInstalled = "after-unit-installed";
inline constexpr const char* kBeforeRestart = "before-restart";
inline constexpr const char* kAfterRestart = "after-restart";
}  // namespace crash

void crashPoint(const char* name);

}  // namespace mesh
