// Bundles: archives (tar, tar.gz, tar.zst, zip) named by their content digest.
// unpack() extracts one into a fresh directory, refusing anything that could
// write outside it; the Manifest it returns describes the tree exactly, so a later
// verify() can tell whether the tree on disk is still what was unpacked. Both work
// through descriptors (util/beneath.hh): no path string reaches the kernel.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/byte_progress.hh"
#include "util/digest.hh"
#include "util/fs.hh"

namespace mesh::bundle {

struct Limits {
  uint64_t maxEntries = 100000;
  uint64_t maxBytes = uint64_t{4} << 30;  // unpacked file bytes in total
  // Group- and world-write bits (022) of files and directories are kept (the
  // archive kind's `keep-modes`); otherwise dropped, on disk and in the manifest
  // alike, so verify() compares like with like.
  bool keepModes = false;
  // The mode of the tree's root: an archive's is 0755; a process bundle's is 0700,
  // read by its service users through an ACL given after the unpack.
  mode_t rootMode = 0755;
};

struct Entry {
  enum class Type { File, Directory, Symlink };
  std::string path;  // relative to the root, '/'-separated, no leading "./"
  Type type = Type::File;
  mode_t mode = 0;     // permission bits as unpacked (setuid/setgid, maybe 022, dropped)
  uint64_t size = 0;   // files
  Digest content;      // files: sha256 of the content
  std::string target;  // symlinks
  bool operator==(const Entry&) const = default;
};

struct Manifest {
  std::vector<Entry> entries;  // sorted by path
  uint64_t files() const;      // count of File entries
  uint64_t bytes() const;      // sum of file sizes
  // Stable text form (JSON) for the state store; parse returns nullopt when malformed.
  std::string str() const;
  [[nodiscard]] static std::optional<Manifest> parse(const std::string& text);
};

// Unpacks `archivePath` into the new directory `name` in the open directory
// `dir`; `name` must not exist yet and is created 0755 (0700 while unpacking).
// `shown` names the destination in messages (default: `name`). Throws mesh::Error
// naming the offending entry and why when the archive is malformed or hostile:
// absolute paths, ".." components, symlinks whose target leaves the tree, hard
// links to anything outside or not yet unpacked, device nodes, FIFOs, sockets,
// more than limits.maxEntries entries or limits.maxBytes bytes. Nothing is ever
// written outside the new directory (every path is opened relative to it,
// component by component, without following links). On error it is removed.
// Modes come from the archive minus setuid/setgid, and minus 022 unless
// limits.keepModes. On return everything under `name` is durable (an fsync of
// each file and directory, never of the file system); `name`'s own entry in
// `dir` is the caller's to sync, once it has its final name.
// `progress`, when set, hears how much of the archive has been read ("unpacking
// <shown>").
Manifest unpack(const std::string& archivePath, int dir, const std::string& name,
                const Limits& limits, const std::string& shown = {},
                const ByteProgress& progress = {});

// Reads the archive without writing anything: the manifest unpack() would produce.
Manifest readManifest(const std::string& archivePath, const Limits& limits);

// Compares the tree open at `tree` (a directory descriptor, opened by the caller
// O_DIRECTORY|O_NOFOLLOW; only borrowed) with `m`. `difference` is nullopt when
// identical, else a short human reason: "changed: bin/x", "missing: etc/y",
// "unexpected: tmp/z", "mode of …". `shown` names the tree in errors.
// `trusted` may carry per-file stat fingerprints (util/fs.hh Fingerprint, keyed by
// the file's index in m.entries) recorded when the tree was last verified; a file
// whose fingerprint matches is not re-hashed. `fresh` holds the fingerprints seen
// now: empty when a difference is found, else only files whose content was
// confirmed and whose fingerprint is not racy (fingerprintIsRacy).
struct VerifyCache {
  // By entry index, ascending (so by path): 64 bytes a file, no path held again.
  std::vector<std::pair<uint32_t, Fingerprint>> fingerprints;
};
struct Verified {
  std::optional<std::string> difference;  // nullopt: the tree is m's
  VerifyCache fresh;
  bool freshIsTrusted = false;  // verifyLean: `fresh` is left empty, for it is `trusted`
};
[[nodiscard]] Verified verify(int tree, const Manifest& m, const VerifyCache* trusted = nullptr,
                              const std::string& shown = {});
// verify(), but when the fingerprints seen are the trusted ones exactly (a no-op),
// `fresh` stays empty and `freshIsTrusted` says so: a tree of 100,000 files holds
// its fingerprints once, not twice.
[[nodiscard]] Verified verifyLean(int tree, const Manifest& m, const VerifyCache& trusted,
                                  const std::string& shown = {});

// What the tree open at `tree` holds that `m` does not name: what replacing the
// tree with m's would delete. Directories are walked (never through a link); a
// directory m does not name counts only when empty ("logs/"), else its content
// counts. `count` is the total; `first` the first `keep` paths in path order.
struct Unlisted {
  uint64_t count = 0;
  std::vector<std::string> first;
};
Unlisted unlisted(int tree, const Manifest& m, size_t keep, const std::string& shown = {});

}  // namespace mesh::bundle
