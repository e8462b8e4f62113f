#pragma once

#include <string>

namespace mesh {

// Throws Error unless nobody but root and the effective user can change what `dir`
// names: every directory on the way, and on the way of every link it passes, is owned
// by root or the effective user and writable by no one else (a world-writable directory
// only when sticky, as /tmp is: others may not rename or remove what is not theirs),
// and every link on the way is owned by root or the effective user. Such a path can then
// be used as a string without a planted link steering what is written there: for the
// directories a root process keeps its records in by path (sockets, locks, logs).
//
// With `mayBeMissing`, components that do not exist yet end the check (call it again
// once they are made); otherwise a missing component is an error too.
void requireTrustedDirectory(const std::string& dir, bool mayBeMissing = false);

}  // namespace mesh
