// File system helpers: atomic writes, observation without following links,
// and the stat fingerprint that lets a no-op cycle skip re-hashing.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/fd.hh"

namespace mesh {

// What a stat says of one path, with no link followed. nullopt: nothing there.
std::optional<struct stat> lstatPath(const std::string& path);

// Ownership to set on a written path; -1 leaves that id as the writer's.
struct Ownership {
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
};

// Replaces `path` with `content`: a temp file beside it (O_EXCL|O_CLOEXEC),
// write, fchmod, fchown, fsync, rename over the target, fsync the directory.
// A crash at any point leaves the old or the new file; the temp file is removed
// on any error. Creates missing parent directories (0755).
void atomicWrite(const std::string& path, std::string_view content, mode_t mode,
                 Ownership owner = {});

// Replaces whatever is at `path` with a symlink to `target`, atomically.
void atomicSymlink(const std::string& path, const std::string& target);

// The same acts relative to an open directory (util/beneath.hh): `name` is one
// component, `shown` names the path in errors. Nothing here follows a link.
//
// The temp entry of a write in progress is named after a hash of `name`, not
// `name` plus a suffix: fixed length whatever the name's (NAME_MAX names work),
// and found again by name, so a write a kill cut short leaves nothing a later
// cycle cannot sweep (removeLeftoversAt). Deterministic names need one writer
// per directory: the cycle, under the state lock.
std::string tempNameFor(std::string_view name, std::string_view tag);  // ".mesh-<tag>.<16 hex>"
// Whether `entry` is a name tempNameFor makes with `tag`, for some name.
bool isTempName(std::string_view entry, std::string_view tag);
// The tag of a tree being unpacked beside the one it replaces (apply/kinds/tree.cc),
// whose leftover gc finds again.
inline constexpr std::string_view kUnpackTag = "new";
void atomicWriteAt(int dir, const std::string& name, std::string_view content, mode_t mode,
                   Ownership owner, const std::string& shown);
// The first half of atomicWriteAt, for a caller that syncs and renames many
// files at once (util/write_batch.hh): `content` under `name`'s temp name,
// owner and mode set, neither synced nor renamed. Returns the temp name (and,
// with `kept`, the file still open there, to sync); on error no temp file is left.
std::string writeTempAt(int dir, const std::string& name, std::string_view content, mode_t mode,
                        Ownership owner, const std::string& shown, Fd* kept = nullptr);
void atomicSymlinkAt(int dir, const std::string& name, const std::string& target,
                     const std::string& shown);
// Removes `name`'s leftovers ("tmp" files, "new" trees); true when there were any.
bool removeLeftoversAt(int dir, const std::string& name, const std::string& shown);

// lstat of `name` in `dir`; nullopt when nothing is there.
std::optional<struct stat> statAt(int dir, const std::string& name, const std::string& shown);
// Opens the regular file `name` for reading, never a link, FIFO or device
// (opened non-blocking, checked with fstat); nullopt when missing or not a file.
std::optional<Fd> openFileAt(int dir, const std::string& name, const std::string& shown);
// The target of the link `name`; nullopt when missing or not a link.
std::optional<std::string> readLinkAt(int dir, const std::string& name, const std::string& shown);
// Removes `name` in `dir`: a tree without following links (like rm -rf).
void removeTreeAt(int dir, const std::string& name, const std::string& shown);
// fsync of an open descriptor (a directory after a rename in it).
void syncFd(int fd, const std::string& shown);

// Reads an open file to its end in chunks; `shown` names it in errors.
void readChunks(int fd, const std::string& shown,
                const std::function<void(std::string_view)>& chunk);

// Reads an open file from its start to its end.
std::string readAll(int fd, const std::string& shown);

// Reads a whole file; throws SysError. nullopt when it does not exist.
std::optional<std::string> readFile(const std::string& path);

// mkdir -p with mode for the directories it creates.
void makeDirs(const std::string& path, mode_t mode = 0755);

// mkdir -p that returns the directories it created, deepest last, so that a
// failed operation can take them away again (removeCreatedDirs).
std::vector<std::string> makeDirsTracked(const std::string& path, mode_t mode = 0755);
// rmdir of `created` (from makeDirsTracked), deepest first; non-empty ones stay.
void removeCreatedDirs(const std::vector<std::string>& created);

// fsync a directory so a rename in it is durable.
void syncDir(const std::string& dir);

std::string parentOf(const std::string& path);
std::string baseName(const std::string& path);

// Removes a tree without following links (like rm -rf). Missing is fine.
void removeTree(const std::string& path);

// A fingerprint of a file's identity and metadata. When the recorded fingerprint
// equals a fresh lstat, the content has not been written since (every write
// moves ctime), so the recorded content digest still holds.
struct Fingerprint {
  uint64_t dev = 0, ino = 0, size = 0;
  int64_t mtimeNs = 0, ctimeNs = 0;
  uint32_t mode = 0, uid = 0, gid = 0;

  static Fingerprint of(const struct stat& st);
  // Text form for the state store; parse returns nullopt on anything malformed.
  std::string str() const;
  // The same text, written to `out` (kMaxText bytes of room) without allocating:
  // its length. Canonical (no leading zeros or signs but a negative's), so two
  // fingerprints are equal exactly when their texts are.
  static constexpr size_t kMaxText = 8 * 24;
  size_t write(char* out) const;
  [[nodiscard]] static std::optional<Fingerprint> parse(std::string_view text);
  // Whether `text` is this fingerprint's text, as str() writes it (then
  // parse(text) == *this), compared without allocating.
  bool is(std::string_view text) const;
  bool operator==(const Fingerprint&) const = default;
};

// A fingerprint taken within the file system's timestamp granularity of its own
// ctime could miss a write that lands in the same tick ("racy" in git's words);
// such a fingerprint must not be trusted.
bool fingerprintIsRacy(const struct stat& st);

}  // namespace mesh
