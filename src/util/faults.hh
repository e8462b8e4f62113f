// Fault injection for crash tests. Compiled into every build and inert unless
// MESH_HOST_CRASH_AT names a point: then reaching that point ends the process at
// once with exit code 86 (no destructors, no flushing — as a crash would).
#pragma once

namespace mesh {

inline constexpr int kCrashExitCode = 86;

// Named points, in the order a cycle reaches them.
namespace crash {
// What a resource's change owes is durable; the change is not made yet.
inline constexpr const char* kAfterIntent = "after-intent";
// A file's new content (or a batch's) is written and synced under its temp name, not yet renamed.
inline constexpr const char* kBeforeRename = "before-rename";
// A batch of files (util/write_batch.hh) is in place and durable; none of their
// records is written yet.
inline constexpr const char* kBatchInPlace = "batch-in-place";
// A new tree is switched in; the old one, beside it, is not removed yet.
inline constexpr const char* kAfterSwitch = "after-switch";
// The change is made; its record (and the restarts it owes) not yet written.
inline constexpr const char* kBeforeRecord = "before-record";
inline constexpr const char* kAfterChangeRecorded = "after-change-recorded";
inline constexpr const char* kAfterUnitInstalled = "after-unit-installed";
inline constexpr const char* kBeforeRestart = "before-restart";
inline constexpr const char* kAfterRestart = "after-restart";
}  // namespace crash

void crashPoint(const char* name);

// TEST-ONLY SEAM (tests/sim): called at every crash point reached, before the
// environment check; the fault simulation throws from it to cut a cycle short
// in-process. nullptr (the default) in every real run.
using CrashHook = void (*)(const char* name);
void setCrashHook(CrashHook hook);

// TEST-ONLY SEAM (tests/sim): asked before each write of file content (the
// atomic writes of util/fs.hh, bundle unpacking); a nonzero errno it returns
// fails that write as the kernel would (ENOSPC: the disk is full). nullptr (the
// default) in every real run, where writeFault() is always 0.
using WriteFaultHook = int (*)(const char* shown);
void setWriteFaultHook(WriteFaultHook hook);
int writeFault(const char* shown);

}  // namespace mesh
