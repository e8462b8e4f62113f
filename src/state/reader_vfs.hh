// The SQLite VFS a reader who may not open the store's -shm uses (an operator in
// the state directory's group: `status`, `history`, `generations`).
//
// The -shm holds the WAL index and SQLite's locks: a WAL writer takes write
// locks on its bytes, and anyone who can open the file — even read-only — can
// take a read lock there that keeps every writer waiting. So only the store's
// owner may open it (0600), and such a reader never touches it: this VFS is the
// system's own with the shared-memory methods replaced, so that SQLite reads the
// WAL into a private index of its own (its "unreliable shared memory" path, as
// for a read-only -shm) and takes no lock a writer waits for. Locks on the main
// file are the system VFS's: a WAL writer never waits on them.
#pragma once

namespace mesh::state {

// Registers the VFS (once) and returns its name, for sqlite3_open_v2.
const char* readerVfs();

}  // namespace mesh::state
