// Fault injection for tests, every seam of it listed here. Compiled into every
// build and inert unless set: MESH_HOST_CRASH_AT names a crash point (reaching it
// ends the process at once with exit code 86: no destructors, no flushing — as a
// crash would); MESH_HOST_FAULT names one behaviour seam (namespace fault); the
// in-process hooks are set only by tests/sim. Never set either on a real node.
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
// The cycle is finished; its trim of old cycles and generations (state/store/
// retention.cc) deleted rows in its transaction, not yet committed.
inline constexpr const char* kMidTrim = "mid-trim";
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

// TEST-ONLY SEAMS: MESH_HOST_FAULT=<name> turns one on (docs/development.md).
namespace fault {
// A supervisor decorator (supervise/fault.hh, put on by apply/context.cc) shows
// every installed unit as edited on even-numbered cycles: every process is replaced
// and restarted every other cycle, the churn `status` must flag
// (tests/e2e/churn_test.cc, tests/fleet).
inline constexpr const char* kRecreateEveryOtherCycle = "recreate-every-other-cycle";
// Every unit is rendered with one more line (apply/kinds/unit_text.cc), as a later
// mesh-host might: an upgrade must restart nothing (tests/e2e/process_test.cc).
inline constexpr const char* kRenderUnitV2 = "render-unit-v2";
}  // namespace fault

// Whether MESH_HOST_FAULT names `seam` (one of namespace fault; read once).
bool faultSet(const char* seam);

}  // namespace mesh
