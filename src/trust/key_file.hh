// Key files are read the way ssh reads its own: a key that someone else could
// have written (or, for a private key, could read) is refused, not used. Every
// key file mesh-host reads — <state-dir>/node.key, operator key files, --trust
// files and <state-dir>/trusted/*.pub — goes through readKeyFile.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>

namespace mesh::trust {

enum class KeyFileKind {
  Private,  // node.key, an operator key: 0600 (no group/other bits at all)
  Public,   // a trusted operator public key: 0644 (no group/other write)
};

// What is wrong with a key file whose (fstat) metadata is `st`, read by a
// process whose effective uid is `self`; nullopt when it may be used. The text
// names `path`, the fault (mode 0666, owner uid 1001) and the fix (chmod 600 …,
// chown root …). A key file must be a regular file, owned by root or by `self`,
// not writable by group or others, and — when private — not readable by them.
std::optional<std::string> keyFileFault(const struct stat& st, const std::string& path,
                                        KeyFileKind kind, uid_t self);

// Reads the key file at `path`: opened with O_NOFOLLOW (a symbolic link is
// refused) and checked with keyFileFault on the open descriptor, so what is
// checked is what is read. nullopt when nothing is at `path`. Throws InputError
// when the file is refused, SysError when it cannot be opened or read.
std::optional<std::string> readKeyFile(const std::string& path, KeyFileKind kind);

}  // namespace mesh::trust
