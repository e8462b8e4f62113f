// The simulated disk under the state store: an SQLite VFS that wraps the
// default "unix" one, made the default for the whole process by install(). It
// lets the fault simulation (sim.cc) do to the store what a machine can:
//   - an OS crash (power cut): every write to a store file since that file's
//     last fsync is lost. The VFS keeps, per path, the file's content as of its
//     last xSync (its durable image); osCrash() takes those images at the
//     moment of the crash, and restoreAfterOsCrash() writes them back once the
//     crashed connection is gone (its close would have synced everything). A
//     file never synced since it was created is gone; the -shm file (SQLite's
//     memory, rebuilt on the first open after a crash) is emptied.
//   - a full disk: from the Nth write on (store xWrite and tree writes, counted
//     together), writes fail with SQLITE_FULL / ENOSPC until cleared.
// Files written by mesh-host's own atomic writes are fsynced before they are
// renamed into place, so an OS crash leaves them as they are.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace mesh::sim::disk {

// Registers the VFS as SQLite's default. Once per process.
void install();
// Whether the VFS keeps each store file's durable image at every fsync, as an OS
// crash needs (default on). A simulation that plays no OS crash turns it off: reading
// the whole file at every sync is most of its cost.
void keepImages(bool on);

// A power cut now: the durable image of every store file, to write back later.
using Images = std::map<std::string, std::optional<std::string>>;  // path → content (nullopt: gone)
Images osCrash();
void restoreAfterOsCrash(const Images& images);

// The files at `path` were removed (a lost store, moved aside): forget them.
void forget(const std::string& path);

// Writes fail (store and tree) from the `nth` write counted from now; 0 ends it.
void failWritesFrom(int nth);
// Whether any write failed since failWritesFrom.
bool anyWriteFailed();
// The hook for setWriteFaultHook (tree writes).
int treeWriteFault(const char* shown);

}  // namespace mesh::sim::disk
